//! `survey`: people answering the demo application's survey, as a browser does it.
//!
//! Each iteration signs in with the form (`POST /survey/login`), looks at the 302 and
//! its `Set-Cookie` (`redirects(0)`), opens the survey page (the cookie jar sends the
//! session cookie), reads the single-use answer token out of the page's JSON
//! `<script>`, submits the page's form (its hidden CSRF field kept, as a browser keeps
//! it) with the token and an answer, and then replays the same answer,
//! which the server must refuse. Every step is a check, so the server's counts can be
//! compared with the plugin's (`demo_survey_answers_total` in the server's `/metrics`):
//! answers accepted in `survey_answers_accepted`, refusals of the replay (409, a
//! conflict) in `survey_conflicts`, and a replay the server accepted (it must not) in
//! `survey_replays_accepted`.
//!
//! The jar is reset at the start of each iteration, so each iteration is a new visitor
//! who signs in again (k6's behaviour).
//!
//! The `browser` scenario signs in the same way through the host's Chromium (the SDK's
//! [`loadtest::browser`]): the form typed into and submitted by a real page.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`).

use loadtest::serde::Deserialize;
use loadtest::{browser, check, cookies, http, metrics, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none, the seed's shape: people arrive at
/// a constant rate (10 a second for a minute) whether or not the site keeps up; an
/// arrival that finds every VU busy is dropped and reported in `dropped_iterations`.
const DEFAULT_CONFIG: &str = r#"[scenarios.answer]
executor = "constant-arrival-rate"
exec = "answer"
rate = 10
time_unit = "1s"
duration = "60s"
pre_allocated_vus = 10
max_vus = 50

[thresholds]
# A replay accepted, or an iteration dropped, shows as a sample; none is the good case.
allow_missing = true
"http_req_duration{name:/survey/answer}" = ["p(95)<500"]
survey_replays_accepted = ["count==0"]
dropped_iterations = ["count<1"]
checks = ["rate>0.99"]
"#;

/// The JSON island of the survey page.
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct SurveyData {
    token: String,
}

/// The scenario.
struct Survey;

impl Scenario for Survey {
    fn describe() -> PluginInfo {
        PluginInfo::new("survey")
            .description(
                "The survey at a constant arrival rate: form sign-in, tokens read out of the page, \
                 one answer, one replay that must be refused",
            )
            .scenario(
                "answer",
                "POST /survey/login (the 302 and its session cookie), GET /survey (CSRF token in the \
                 form, single-use token in a JSON script tag), POST /survey/answer (200), the same \
                 answer again (409: counted in survey_conflicts; a 200 in survey_replays_accepted)",
            )
            .scenario(
                "browser",
                "The sign-in in the host's Chromium: the form typed into and submitted, the \
                 survey page's signed-in user read (checks `browser: ...`)",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        let base = vu::base_url("http://127.0.0.1:8080");
        if scenario == "browser" {
            return browser_sign_in(&base);
        }
        let user = format!("vu-{}", vu::id());

        // 1. The form sign-in; the 302 itself, with its Set-Cookie.
        let login = http::post(format!("{base}/survey/login"))
            .form(&[("user", user.as_str()), ("password", "demo")])
            .redirects(0)
            .name("/survey/login")
            .send()?;
        let cookie = login.header("set-cookie").unwrap_or_default().to_owned();
        check(
            "login answers 302 to /survey",
            login.status() == 302 && login.header("location") == Some("/survey"),
        );
        check(
            "login sets the session cookie",
            cookie.starts_with("survey_session="),
        );
        drop(login);
        check(
            "the jar holds the session",
            cookies::jar()
                .get(format!("{base}/survey"), "survey_session")?
                .is_some(),
        );

        // 2. The page; without the cookie it would redirect to the sign-in.
        let page = http::get(format!("{base}/survey")).name("/survey").send()?;
        let signed_in = page.status() == 200 && page.url().ends_with("/survey");
        if !check("the jar sends the session cookie", signed_in) {
            return Err(format!(
                "survey page: status {} at {}",
                page.status(),
                page.url()
            ));
        }

        // 3. The answer token is in a JSON island; the CSRF token is a hidden field of
        // the form, which the form helper keeps as a browser would.
        let data: SurveyData = page.html().json_script("survey-data")?;
        let answer = (vu::iteration() % 5 + 1).to_string();
        let form = page
            .form("form[action='/survey/answer']")?
            .set("token", &data.token)
            .set("answer", &answer);
        let fields = form.fields()?;
        check(
            "tokens found in the page",
            fields.iter().any(|(k, v)| k == "csrf" && !v.is_empty()) && !data.token.is_empty(),
        );

        // 4. The answer, then the same answer again: the token is single-use.
        let request = form.request()?.name("/survey/answer");
        let first = request.clone().send()?;
        if check("answer accepted", first.status() == 200) {
            metrics::counter("survey_answers_accepted", 1.0, &[]);
        }
        let replay = request.expect_status(409).send()?;
        if check("replayed token refused", replay.status() == 409) {
            metrics::counter("survey_conflicts", 1.0, &[]);
        }
        if replay.status() == 200 {
            metrics::counter("survey_replays_accepted", 1.0, &[]);
        }
        Ok(())
    }
}

/// The `browser` scenario: the sign-in as a person does it, in a page of its own.
fn browser_sign_in(base: &str) -> Result<(), String> {
    let user = format!("vu-{}", vu::id());
    let context = browser::Context::open(&browser::ContextOptions::default())?;
    let page = context.new_page()?;
    // Contract 0.3.10: the page's requests go through a route handler (each call that
    // waits on the page is resumed through it) and its events are kept.
    let routed = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let seen = routed.clone();
    page.route(move |r| {
        seen.set(seen.get() + 1);
        if r.url.ends_with("/favicon.ico") {
            browser::RouteAnswer::Abort("failed".into())
        } else {
            browser::RouteAnswer::Continue
        }
    });
    page.listen(&["request"])?;
    let status = page.goto(&format!("{base}/survey/login"))?;
    check("browser: the form loads", status == 200);
    let events = page.take_events();
    let document_seen = events.iter().any(|e| {
        e["event"] == "request"
            && e["resourceType"] == "Document"
            && e["url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/survey/login"))
    });
    page.locator("input[name=\"user\"]").type_text(&user)?;
    page.locator("input[name=\"password\"]").type_text("demo")?;
    let mark = page.navigation_mark();
    page.locator("button").click()?;
    page.wait_for_navigation(mark)?;
    let who = page.locator("#user").text_content()?;
    check(
        "browser: signed in as this VU",
        who.as_deref() == Some(user.as_str()),
    );
    check(
        "browser: on the survey page",
        page.url()?.ends_with("/survey"),
    );
    let value: loadtest::serde_json::Value = page
        .evaluate_handle("() => ({ n: 2 })", &())?
        .json_value()?;
    let shown = match page.query("#user")? {
        Some(el) => el.text_content()?,
        None => None,
    };
    check(
        "browser: routes, events and handles",
        routed.get() >= 2
            && document_seen
            && value["n"] == 2
            && shown.as_deref() == Some(user.as_str()),
    );
    page.emulate_media(None, Some("dark"), None)?;
    let dark: bool = page.evaluate(
        "() => matchMedia('(prefers-color-scheme: dark)').matches",
        &(),
    )?;
    page.mouse_wheel(10.0, 10.0, 0.0, 40.0)?;
    page.keyboard_down("Shift")?;
    page.keyboard_up("Shift")?;
    page.evaluate::<loadtest::serde_json::Value>(
        "() => { window.__poked = 0; document.getElementById('user').addEventListener('poke', () => { window.__poked += 1; }); }",
        &(),
    )?;
    page.locator("#user")
        .dispatch_event("poke", &loadtest::serde_json::json!({}))?;
    let poked: u32 = page.evaluate("() => window.__poked", &())?;
    page.evaluate::<loadtest::serde_json::Value>(
        "() => { document.body.insertAdjacentHTML('beforeend', '<iframe srcdoc=\"<button id=b>in</button>\"></iframe>'); }",
        &(),
    )?;
    let framed = page.frame_locator("iframe").locator("#b").text_content()?;
    page.set_offline(true)?;
    let offline: String = page.evaluate(
        "() => fetch(location.href).then(() => 'online', () => 'offline')",
        &(),
    )?;
    check(
        "browser: emulation and input",
        dark && poked == 1 && offline == "offline" && framed.as_deref() == Some("in"),
    );
    context.close()?;
    Ok(())
}

loadtest::export!(Survey);
