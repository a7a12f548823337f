//! HTML pages and forms in every plugin language, against the demo target's real survey
//! (a form sign-in, a CSRF field in the answer form, a single-use token in a JSON
//! `<script>`, a link back to the sign-in): k6's `k6/html` Selection API and
//! `res.submitForm` / `res.clickLink` in a JavaScript script, and the unmodified k6
//! parity script bench/k6-parity/survey.js. (The Rust SDK's helpers are used by
//! plugins/survey, tested in browser.rs and examples/async_limits_and_forms.rs; the Python SDK's in
//! author/python.rs, which builds a Python plugin once for all its runs.) The server's
//! own counters must show every token used once: no replay accepted, no CSRF refused.

use crate::support as common;
use crate::support::check_counts as check;

use common::{host_in as host, output_text as text};

use demo_target::{DemoConfig, DemoServer};
use std::path::Path;
use std::process::Output;

async fn target() -> DemoServer {
    DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .expect("demo target starts")
}

/// `host run PLUGIN -e BASE_URL=... --out OUT --quiet` plus `extra`; the summary.
async fn run(dir: &Path, plugin: &str, base: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let out = dir.join("results");
    let mut args: Vec<String> = vec!["run".into(), plugin.into(), "-e".into()];
    args.push(format!("BASE_URL={base}"));
    args.extend([
        "--out".into(),
        out.to_str().unwrap().into(),
        "--quiet".into(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let ran = host(dir, args).await;
    let summary = if out.is_dir() {
        common::summary_json(&common::only_results_dir(&out))
    } else {
        serde_json::Value::Null
    };
    (ran, summary)
}

fn all_checks_pass(summary: &serde_json::Value, shown: &str) {
    let checks = summary["checks"].as_array().expect("checks");
    assert!(!checks.is_empty(), "{shown}");
    for c in checks {
        assert_eq!(c["fails"].as_u64(), Some(0), "check failed: {c}\n{shown}");
    }
}

const SELECTIONS: &str = r#"
import http from 'k6/http';
import { check } from 'k6';
import { parseHTML } from 'k6/html';
import exec from 'k6/execution';

const BASE = __ENV.BASE_URL.replace(/\/$/, '');
export const options = {
  scenarios: { answer: { executor: 'per-vu-iterations', vus: 2, iterations: 3, exec: 'answer' } },
};

const DOC = `<!doctype html><html><body><div id="a" class="x y" data-id="7" data-user-name="ann" data-cfg='{"k":1}'><p>one</p><p class="two">two <b>bold</b></p><!-- c --><span>three</span></div>
<ul><li>1</li><li class="odd">2</li><li>3</li></ul>
<form id="f"><input type="hidden" name="csrf" value="c 1"><input type="checkbox" name="cb" checked><select name="s"><option>A</option><option value="b" selected>B</option></select><select name="m" multiple><option selected>x</option><option selected>y</option></select><textarea name="t">text</textarea><input type="submit" name="go" value="Go"></form></body></html>`;

export function answer() {
  const doc = parseHTML(DOC);
  const div = doc.find('#a');
  const li = doc.find('li');
  const seen = [];
  li.each((i, el) => seen.push(`${i}:${el.textContent()}`));
  const el = div.get(0);
  check(doc, {
    'find, size, attr, text': () => div.size() === 1 && div.attr('class') === 'x y'
      && div.attr('nope', 'dflt') === 'dflt' && doc.find('p.two').text() === 'two bold',
    'children, parent, closest, parents': () => div.children().size() === 3
      && div.children('p').size() === 2 && doc.find('b').parent().is('.two')
      && doc.find('b').closest('div').attr('id') === 'a' && doc.find('b').parents().size() === 4,
    'siblings, next, prev, nextAll, prevAll': () => li.eq(1).siblings().size() === 2
      && li.first().next().text() === '2' && li.last().prev().is('.odd')
      && li.first().nextAll().size() === 2 && li.last().prevAll('.odd').size() === 1,
    'filter, not, is, has, slice': () => li.filter('.odd').text() === '2'
      && li.not('.odd').size() === 2 && li.filter((i) => i === 2).text() === '3'
      && doc.find('div').has('b').size() === 1 && li.slice(1).size() === 2 && !li.is('p'),
    'each, map, get, toArray': () => seen.join(',') === '0:1,1:2,2:3'
      && li.map((i, s) => s.text()).join(',') === '1,2,3' && li.get(0).nodeName() === 'li'
      && li.toArray().length === 3 && li.toArray()[2].text() === '3',
    'html, contents, data': () => doc.find('p.two').html() === 'two <b>bold</b>'
      && div.contents().size() === 4 && div.data('id') === 7 && div.data('userName') === 'ann'
      && div.data().cfg.k === 1,
    'elements': () => el.id() === 'a' && el.classList().length === 2 && el.childElementCount() === 3
      && el.firstElementChild().textContent() === 'one' && el.querySelector('b').innerHTML() === 'bold'
      && el.nodeType() === 1 && el.hasAttribute('data-id') && el.lastChild().textContent() === 'three',
    'forms serialize as a browser submits them': () =>
      doc.find('#f').serialize() === 'csrf=c%201&cb=on&s=b&m=x&m=y&t=text'
      && doc.find('#f').serializeObject().m.length === 2
      && doc.find('#f').serializeArray()[0].name === 'csrf'
      && doc.find('select[name=s]').val() === 'b' && doc.find('select[name=m]').val().join() === 'x,y'
      && doc.find('textarea').val() === 'text' && doc.find('input[name=cb]').val() === 'on',
    'a bad selector throws with the selector': () => {
      try { doc.find('p['); return false; } catch (e) { return String(e).includes('p['); }
    },
  });

  const signin = http.get(`${BASE}/survey/login`, { tags: { name: '/survey/login' } });
  const login = signin.submitForm({
    fields: { user: `js-${exec.vu.idInTest}`, password: 'demo' },
    params: { redirects: 0, tags: { name: '/survey/login' } },
  });
  check(login, { 'submitForm posted the sign-in': (r) => r.status === 302 && r.request.method === 'POST' });
  const page = http.get(`${BASE}/survey`, { tags: { name: '/survey' } });
  const token = JSON.parse(page.html('script#survey-data').text()).token;
  check(page, { 'res.html() finds the token': () => typeof token === 'string' && token.length > 0 });
  const form = { formSelector: 'form[action="/survey/answer"]', fields: { token, answer: '3' } };
  const first = page.submitForm(Object.assign({ params: { tags: { name: '/survey/answer' } } }, form));
  check(first, { 'answer accepted': (r) => r.status === 200 });
  const replay = page.submitForm(Object.assign({
    params: { tags: { name: '/survey/answer' }, responseCallback: http.expectedStatuses(409) },
  }, form));
  check(replay, { 'replay refused': (r) => r.status === 409 });
  const back = page.clickLink({ selector: 'a#signin', params: { tags: { name: '/survey/login' } } });
  check(back, {
    'clickLink follows the link': (r) => r.status === 200 && r.url === `${BASE}/survey/login`
      && r.html('form').attr('action') === '/survey/login',
  });
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_html_selections_submit_form_and_click_link_work_on_the_real_survey() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("pages.js"), SELECTIONS).unwrap();
    let server = target().await;
    let (ran, summary) = run(tmp.path(), "pages.js", &server.base_url(), &[]).await;
    let counts = server.survey_counts();
    let served = server.requests_served();
    server.shutdown().await;
    let shown = text(&ran);
    assert!(ran.status.success(), "{shown}");
    all_checks_pass(&summary, &shown);
    assert_eq!(check(&summary, "answer accepted"), (6, 0));
    assert_eq!(check(&summary, "elements"), (6, 0));
    // Six iterations of: the sign-in page, its form, the survey, two answers, the link.
    assert_eq!(served, 36, "{shown}");
    assert_eq!(
        summary["metrics"]["http_reqs"]["count"].as_f64(),
        Some(36.0)
    );
    // The server saw each token used once: six accepted, six replays refused, and the
    // CSRF field the form carried was right every time.
    assert_eq!(
        (
            counts.logins,
            counts.pages,
            counts.accepted,
            counts.token_refused,
            counts.csrf_refused
        ),
        (6, 6, 6, 6, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_k6_parity_survey_script_runs_unmodified() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/k6-parity/survey.js");
    let tmp = tempfile::tempdir().unwrap();
    let server = target().await;
    let (ran, summary) = run(
        tmp.path(),
        script.to_str().unwrap(),
        &server.base_url(),
        &["-e", "RATE=10", "-e", "DURATION_S=2"],
    )
    .await;
    let counts = server.survey_counts();
    server.shutdown().await;
    let shown = text(&ran);
    assert!(ran.status.success(), "{shown}");
    all_checks_pass(&summary, &shown);
    let metric = |name: &str| summary["metrics"][name]["count"].as_f64().unwrap_or(0.0) as u64;
    let accepted = metric("survey_answers_accepted");
    assert!(accepted >= 5, "{shown}");
    // What the script counted is what the server counted.
    assert_eq!(counts.accepted, accepted);
    assert_eq!(counts.token_refused, metric("survey_conflicts"));
    assert_eq!(metric("survey_replays_accepted"), 0);
    assert_eq!(counts.csrf_refused, 0);
    assert_eq!(counts.logins, accepted);
}
