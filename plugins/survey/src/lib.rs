//! `survey`: people answering the demo application's survey, as a browser does it.
//!
//! Each iteration signs in with the form (`POST /survey/login`), looks at the 302 and
//! its `Set-Cookie` (`redirects(0)`), opens the survey page (the cookie jar sends the
//! session cookie), reads the CSRF token out of the form and the single-use answer
//! token out of the page's JSON `<script>`, answers, and then replays the same answer,
//! which the server must refuse. Every step is a check, so the server's counts can be
//! compared with the plugin's.
//!
//! The jar is reset at the start of each iteration, so each iteration is a new visitor
//! who signs in again (k6's behaviour).
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`).

use loadtest::serde::Deserialize;
use loadtest::{check, cookies, http, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.answer]
executor = "constant-vus"
vus = 5
duration = "10s"
exec = "answer"
"#;

/// The JSON island of the survey page.
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct SurveyData {
    token: String,
}

/// The scenario.
struct Survey;

fn base_url() -> String {
    vu::env_or("BASE_URL", "http://127.0.0.1:8080")
}

impl Scenario for Survey {
    fn describe() -> PluginInfo {
        PluginInfo::new("survey")
            .description("Sign in with a form, read tokens out of the page, answer once, replay")
            .scenario(
                "answer",
                "form sign-in, survey page, one answer, one replayed answer",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(_scenario: String) -> Result<(), String> {
        let base = base_url();
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

        // 3. The tokens: CSRF in a hidden field, the answer token in a JSON island.
        let doc = page.html();
        let csrf = doc.attr("input[name=csrf]", "value")?.unwrap_or_default();
        let data: SurveyData = doc.json_script("survey-data")?;
        check(
            "tokens found in the page",
            !csrf.is_empty() && !data.token.is_empty(),
        );

        // 4. The answer, then the same answer again: the token is single-use.
        let answer = (vu::iteration() % 5 + 1).to_string();
        let form = [
            ("csrf", csrf.as_str()),
            ("token", data.token.as_str()),
            ("answer", answer.as_str()),
        ];
        let first = http::post(format!("{base}/survey/answer"))
            .form(&form)
            .name("/survey/answer")
            .send()?;
        check("answer accepted", first.status() == 200);
        let replay = http::post(format!("{base}/survey/answer"))
            .form(&form)
            .name("/survey/answer")
            .expect_status(409)
            .send()?;
        check("replayed token refused", replay.status() == 409);
        Ok(())
    }
}

loadtest::export!(Survey);
