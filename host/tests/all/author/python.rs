//! A Python plugin end to end: `host new --lang python` (whose app is the example
//! plugins/python/hello_py), `host build` with componentize-py, `host inspect`, and a
//! run against the demo target whose request count must equal `http_reqs`.

use crate::support as common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// componentize-py: `$COMPONENTIZE_PY`, else the venv `./dev test` makes
/// (target/py-venv), else PATH.
fn componentize_py() -> PathBuf {
    if let Some(p) = std::env::var_os("COMPONENTIZE_PY") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/py-venv/bin/componentize-py");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("componentize-py")
}

fn host(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(dir)
        .env("COMPONENTIZE_PY", componentize_py())
        .args(args)
        .output()
        .expect("the host binary runs")
}

/// `host run` arguments of one part of the Python plugin's test: the component, 2 VUs
/// and `iterations` in all, each of `env` as `-e`, results in `out`, quiet.
fn part_args(component: &Path, iterations: u32, env: &[String], out: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        component.display().to_string(),
        "--vus".into(),
        "2".into(),
        "--iterations".into(),
        iterations.to_string(),
    ];
    for e in env {
        args.push("-e".into());
        args.push(e.clone());
    }
    args.extend(["--out".into(), out.display().to_string(), "--quiet".into()]);
    args
}

/// [`host`] on a blocking thread, so the test's servers on this runtime keep answering.
async fn host_off_runtime(dir: &Path, args: Vec<String>) -> Output {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        host(&dir, &args)
    })
    .await
    .unwrap()
}

/// The survey flow written with the Python SDK's form and page helpers: the sign-in
/// form submitted, the answer form's hidden CSRF field kept, the single-use token read
/// out of the page's JSON `<script>`, the replay refused, the link followed.
const PY_SURVEY: &str = r##"    def survey(self):
        base = loadtest.env("BASE_URL").rstrip("/")
        user = f"py-{loadtest.info().vu_id}"
        signin = loadtest.http.get(base + "/survey/login", name="/survey/login")
        login = signin.form().set("user", user).set("password", "demo").submit(
            name="/survey/login", redirects=0)
        loadtest.check("the sign-in form answered 302", login.status == 302)
        page = loadtest.http.get(base + "/survey", name="/survey")
        doc = page.html()
        token = doc.json_script("survey-data")["token"]
        form = page.form("form[action='/survey/answer']").set("token", token).set("answer", "2")
        fields = dict(form.fields())
        loadtest.check("the hidden CSRF field is kept", len(fields.get("csrf", "")) > 0)
        loadtest.check("the page's text", doc.text("#user") == user)
        request = form.request()
        first = request.send(name="/survey/answer")
        loadtest.check("answer accepted", first.status == 200)
        replay = request.send(name="/survey/answer", expected=[(409, 409)])
        loadtest.check("replay refused", replay.status == 409)
        back = page.link("a#signin").send(name="/survey/login")
        loadtest.check("the link leads to the sign-in",
                       back.status == 200 and back.url == base + "/survey/login")
        loadtest.check("links resolve", doc.links("a[href]") == [base + "/survey/login"])
        try:
            doc.select("p[")
            loadtest.check("a bad selector raises", False)
        except ValueError as e:
            loadtest.check("a bad selector raises", "p[" in str(e))

    def versions(self):
        base = loadtest.env("BASE_URL").rstrip("/")
        h3 = loadtest.http.get(base + "/", name="/h3", version="h3")
        h1 = loadtest.http.get(base + "/", name="/h1", version="http/1.1")
        batch = loadtest.http.batch([
            ("GET", base + "/", {"name": "/h2", "version": "h2"}),
            ("GET", base + "/", {"name": "/h3", "version": "h3"}),
        ])
        loadtest.check("each version answered",
                       all(r.status == 200 for r in [h3, h1] + batch))
        plain = base.replace("https://", "http://", 1)
        for url, version in [(plain + "/", "h3"), (base + "/", "h4")]:
            try:
                loadtest.http.get(url, name="/refused", version=version)
                loadtest.check("an impossible version is refused", False)
            except loadtest.HttpError as e:
                loadtest.check("an impossible version is refused", e.kind == "invalid")

    def grpc_calls(self):
        if getattr(self, "channel", None) is None:
            self.channel = grpc.Channel.connect(
                loadtest.env("GRPC_TARGET"), reflect=True,
                reflect_metadata={"x-reflect-token": "py"})
        ch = self.channel
        reply = ch.invoke("loadtest.test.Counter/Echo", {"text": "py"}, name="echo")
        loadtest.check("grpc echo", reply.code == 0 and reply.message["text"] == "py")
        loadtest.check("grpc health", ch.health_check() == "SERVING")
        try:
            ch.invoke("loadtest.test.Counter/Fail", {"text": "x"})
            loadtest.check("grpc status raised", False)
        except grpc.GrpcError as e:
            loadtest.check("grpc status raised", e.kind == "status" and e.code == 3)
        stream = ch.stream("loadtest.test.Counter/Watch")
        stream.send({"text": "w", "count": 2})
        got = 0
        while True:
            try:
                if stream.recv(5.0) is not None:
                    got += 1
            except EOFError:
                break
        loadtest.check("grpc stream messages", got == 2)
        if getattr(self, "echo", None) is None:
            self.echo = ch.prepare("loadtest.test.Counter/Echo", {"text": "prepared"})
            self.fail = ch.prepare("loadtest.test.Counter/Fail", {"text": "x"}, expect=[3])
        r = self.echo.invoke()
        f = self.fail.invoke()
        loadtest.check("grpc prepared", r.code == 0 and r.message["text"] == "prepared"
                       and r.trailers.get("grpc-status") == "0"
                       and f.code == 3 and f.message is None)

    def browser_signin(self):
        base = loadtest.env("BASE_URL").rstrip("/")
        user = f"py-{loadtest.info().vu_id}"
        context = browser.Context.open(viewport=(800, 600))
        page = context.new_page()
        routed = []
        page.route(lambda r: routed.append(r["url"]) or ("continue",))
        page.listen(["console"])
        status = page.goto(base + "/survey/login")
        page.locator('input[name="user"]').type(user)
        page.locator('input[name="password"]').type("demo")
        mark = page.navigation_mark()
        page.locator("button").click()
        page.wait_for_navigation(mark)
        loadtest.check("browser: signed in as this VU",
                       status == 200 and page.locator("#user").text_content() == user)
        loadtest.check("browser: evaluate", page.evaluate("() => innerWidth") == 800)
        page.evaluate("() => console.log('from the page')")
        logs = [e["text"] for e in page.take_events() if e["event"] == "console"]
        box = page.evaluate_handle("() => ({n: 3})").json_value()
        user_el = page.query("#user")
        loadtest.check("browser: routes, events and handles",
                       len(routed) >= 2 and logs == ["from the page"] and box == {"n": 3}
                       and user_el is not None and user_el.text_content() == user)
        page.evaluate("() => { document.body.insertAdjacentHTML('beforeend', "
                      "'<iframe srcdoc=\"<button id=b>in</button>\"></iframe>'); }")
        framed = page.frame_locator("iframe").locator("#b").text_content()
        page.emulate_media(color_scheme="dark")
        page.set_offline(True)
        offline = page.evaluate("() => fetch(location.href).then(() => 'online', () => 'offline')")
        page.set_offline(False)
        loadtest.check("browser: emulation",
                       page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
                       is True and offline == "offline" and framed == "in")
        try:
            page.goto("http://192.0.2.1/")
            loadtest.check("browser: a denied goto raises", False)
        except browser.BrowserError as e:
            loadtest.check("browser: a denied goto raises", e.kind == "denied")
        context.close()

    def iteration(self, scenario):
        if loadtest.env("BROWSER") == "1":
            return self.browser_signin()
        if loadtest.env("GRPC") == "1":
            return self.grpc_calls()
        if loadtest.env("SURVEY") == "1":
            return self.survey()
        if loadtest.env("VERSIONS") == "1":
            return self.versions()
"##;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_plugin_builds_and_runs_against_the_demo_target() {
    let tool = componentize_py();
    let version = Command::new(&tool).arg("--version").output();
    assert!(
        version.as_ref().is_ok_and(|o| o.status.success()),
        "componentize-py is needed ({}): ./dev test installs it in target/py-venv, or pip install componentize-py=={}",
        tool.display(),
        host::COMPONENTIZE_PY_VERSION
    );

    let tmp = tempfile::tempdir().unwrap();
    let made = host(tmp.path(), &["new", "team-py", "--lang", "python"]);
    assert!(made.status.success(), "{}", text(&made));
    let project = tmp.path().join("team-py");
    for file in [
        "app.py",
        "README.md",
        "loadtest/__init__.py",
        "loadtest/http.py",
        "wit/scenario.wit",
    ] {
        assert!(project.join(file).is_file(), "host new wrote no {file}");
    }

    // A request body larger than the plugin's memory may hold (BODY_MB).
    let app = project.join("app.py");
    let code = std::fs::read_to_string(&app).unwrap();
    let big = code.replacen(
        "    def iteration(self, scenario):\n",
        "    def iteration(self, scenario):\n        mb = int(loadtest.env(\"BODY_MB\", \"0\"))\n        if mb:\n            loadtest.http.post(self.url, body=b\"x\" * (mb << 20), name=\"/big\")\n            return\n",
        1,
    );
    assert_ne!(big, code, "the template has an iteration method");
    // The survey through the SDK's form and page helpers (SURVEY=1).
    let big = big.replacen("    def iteration(self, scenario):\n", PY_SURVEY, 1);
    // The gRPC module, imported at the top as the SDK says (componentize-py bundles
    // what the app imports when it is built).
    let big = big.replacen(
        "import loadtest\n",
        "import loadtest\nfrom loadtest import browser, grpc\n",
        1,
    );
    std::fs::write(&app, big).unwrap();

    let built = host(&project, &["build"]);
    assert!(built.status.success(), "{}", text(&built));
    let component = PathBuf::from(String::from_utf8(built.stdout.clone()).unwrap().trim());
    assert!(
        component.ends_with("target/team_py.wasm") && component.is_file(),
        "{}",
        text(&built)
    );

    let inspected = host(tmp.path(), &["inspect", component.to_str().unwrap()]);
    let shown = text(&inspected);
    assert!(inspected.status.success(), "{shown}");
    for expected in [
        "name:        team-py",
        "built against: 0.3.10",
        // CPython imports sockets and files; the host links them with no access.
        "(wasi:sockets and wasi:filesystem are linked, as the plugin's runtime imports them, but have no access",
    ] {
        assert!(shown.contains(expected), "no {expected:?} in\n{shown}");
    }
    // The SDK's interfaces, whatever else the contract's world brings in beside them.
    let uses: Vec<&str> = shown
        .lines()
        .find_map(|l| l.strip_prefix("uses:"))
        .unwrap_or_else(|| panic!("no uses: line in\n{shown}"))
        .split(',')
        .map(str::trim)
        .collect();
    for interface in ["http", "metrics", "vu"] {
        assert!(uses.contains(&interface), "{interface} not in {uses:?}");
    }

    // 20 VUs: a Python component instantiates many core modules, more than the pool
    // of a Rust-sized plugin holds (it failed at 21 VUs before the pool was sized from
    // the file). A shared data set, read by the plugin through `data_get`.
    std::fs::write(
        tmp.path().join("users.json"),
        r#"[{"name": "a"}, {"name": "b"}]"#,
    )
    .unwrap();
    let config = common::write_config(
        tmp.path(),
        "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 20\niterations = 60\n\
         [data]\nusers = \"users.json\"\n",
    );
    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let out = tmp.path().join("results");
    let args: Vec<String> = vec![
        "run".into(),
        component.display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "-e".into(),
        format!("BASE_URL={}", target.base_url()),
        "--out".into(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    let ran = host_off_runtime(tmp.path(), args).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let served = target.requests_served() - before;
    let summary = common::counted_and_served(&out, served, 60);
    for name in ["status is 200", "a user record"] {
        let check = summary["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name:?}: {}", summary["checks"]));
        assert_eq!(
            (check["passes"].as_u64(), check["fails"].as_u64()),
            (Some(60), Some(0)),
            "{check}"
        );
    }
    // The custom trend: one sample per iteration.
    assert_eq!(
        summary["metrics"]["body_kb"]["count"].as_f64(),
        Some(60.0),
        "{}",
        summary["metrics"]
    );

    // WebSockets: each VU signs in, opens the live-updates socket and gets its
    // subscription acknowledged, in init.
    let out = tmp.path().join("results-ws");
    let args = part_args(
        &component,
        4,
        &[
            format!("BASE_URL={}", target.base_url()),
            "WEBSOCKET=1".into(),
        ],
        &out,
    );
    let ran = host_off_runtime(tmp.path(), args).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    let subscribed = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "socket subscribed")
        .unwrap_or_else(|| panic!("no socket check: {}", summary["checks"]));
    assert_eq!(subscribed["passes"].as_u64(), Some(2), "{subscribed}");

    // A body past the plugin's memory: CPython raises MemoryError without a word; the
    // run's error says what happened, not "MemoryError: ".
    let out = tmp.path().join("results-big");
    let args: Vec<String> = vec![
        "run".into(),
        component.display().to_string(),
        "--vus".into(),
        "1".into(),
        "--iterations".into(),
        "1".into(),
        "-e".into(),
        format!("BASE_URL={}", target.base_url()),
        "-e".into(),
        "BODY_MB=200".into(),
        "--out".into(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    let ran = host_off_runtime(tmp.path(), args).await;
    let summary = common::summary_json(&common::only_results_dir(&out));
    let errors = summary["plugin_errors"].as_array().unwrap();
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "MemoryError: out of memory: the plugin's memory is capped ([limits] memory_mb)"
        ),
        "{message}\n{}",
        text(&ran)
    );

    // The SDK's form and page helpers on the survey's real pages: six iterations of
    // the sign-in page, its form, the survey, two answers and the link. The server saw
    // each single-use token used once and every CSRF field right.
    let survey = demo_target::DemoServer::start(
        "127.0.0.1:0".parse().unwrap(),
        demo_target::DemoConfig::default(),
    )
    .await
    .unwrap();
    let out = tmp.path().join("results-survey");
    let args = part_args(
        &component,
        6,
        &[format!("BASE_URL={}", survey.base_url()), "SURVEY=1".into()],
        &out,
    );
    let ran = host_off_runtime(tmp.path(), args).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let counts = survey.survey_counts();
    let summary = common::counted_and_served(&out, survey.requests_served(), 36);
    survey.shutdown().await;
    for c in summary["checks"].as_array().unwrap() {
        assert_eq!(
            (c["passes"].as_u64(), c["fails"].as_u64()),
            (Some(6), Some(0)),
            "{c}\n{}",
            text(&ran)
        );
    }
    assert_eq!(summary["checks"].as_array().unwrap().len(), 8);
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

    // The browser (contract 0.3.8) through the SDK's `browser` module: the sign-in in
    // the host's Chromium, the server counting one per iteration.
    {
        let _turn = common::turns::BROWSER.lock().await;
        let signins = demo_target::DemoServer::start(
            "127.0.0.1:0".parse().unwrap(),
            demo_target::DemoConfig::default(),
        )
        .await
        .unwrap();
        let out = tmp.path().join("results-browser");
        let args = part_args(
            &component,
            4,
            &[
                format!("BASE_URL={}", signins.base_url()),
                "BROWSER=1".into(),
            ],
            &out,
        );
        let ran = host_off_runtime(tmp.path(), args).await;
        assert!(ran.status.success(), "{}", text(&ran));
        let summary = common::summary_json(&common::only_results_dir(&out));
        for name in [
            "browser: signed in as this VU",
            "browser: evaluate",
            "browser: a denied goto raises",
            "browser: routes, events and handles",
            "browser: emulation",
        ] {
            assert_eq!(
                common::check_counts(&summary, name),
                (4, 0),
                "{name}\n{}",
                text(&ran)
            );
        }
        assert_eq!(signins.survey_counts().logins, 4);
        signins.shutdown().await;
    }

    // Each request's HTTP version (contract 0.3.4) through the SDK's `version=`: one
    // origin serving https over TCP and HTTP/3 at the same port number over UDP.
    let tls = demo_target::DemoTls::generate(&["127.0.0.1"]).unwrap();
    let mut server = demo_target::DemoServer::start_tls(
        "127.0.0.1:0".parse().unwrap(),
        demo_target::DemoConfig::default(),
        tls.server_config().unwrap(),
    )
    .await
    .unwrap();
    server.also_h3(server.addr(), &tls).unwrap();
    let ca = tmp.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    let config = common::write_config(
        tmp.path(),
        &format!(
            "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 2\n\
         [tls]\nca_file = {ca:?}\n[thresholds]\n\
         \"http_reqs{{name:/h3,proto:HTTP/3}}\" = [\"count==4\"]\n\
         \"http_reqs{{name:/h2,proto:HTTP/2}}\" = [\"count==2\"]\n\
         \"http_reqs{{name:/h1,proto:HTTP/1.1}}\" = [\"count==2\"]\n"
        ),
    );
    let out = tmp.path().join("results-versions");
    let args: Vec<String> = vec![
        "run".into(),
        component.display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "-e".into(),
        format!("BASE_URL={}", server.base_url()),
        "-e".into(),
        "VERSIONS=1".into(),
        "--out".into(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    let ran = host_off_runtime(tmp.path(), args).await;
    // The thresholds hold only if each request went over the version it asked for.
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::counted_and_served(&out, server.requests_served(), 8);
    server.shutdown().await;
    for c in summary["checks"].as_array().unwrap() {
        assert_eq!(c["fails"].as_u64(), Some(0), "{c}\n{}", text(&ran));
    }
    assert_eq!(summary["checks"].as_array().unwrap().len(), 2);

    // gRPC through the Python SDK against grpcio (a server this project did not
    // write): reflection with metadata, a unary call, the carried health service, a
    // status raised, a server stream, prepared calls (one OK, one expected status). What the server served is what the host counted.
    let mut grpcio = crate::support::grpc_server::Server::plaintext();
    let out = tmp.path().join("results-grpc");
    let args = part_args(
        &component,
        6,
        &[
            format!("GRPC_TARGET=127.0.0.1:{}", grpcio.plain),
            "GRPC=1".into(),
        ],
        &out,
    );
    let ran = host_off_runtime(tmp.path(), args).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let served = grpcio.stats();
    let calls = |m: &str| served["calls"][m].as_f64().unwrap_or(0.0);
    let summary = common::summary_json(&common::only_results_dir(&out));
    for c in summary["checks"].as_array().unwrap() {
        assert_eq!(
            (c["passes"].as_u64(), c["fails"].as_u64()),
            (Some(6), Some(0)),
            "{c}\n{}",
            text(&ran)
        );
    }
    assert_eq!(summary["checks"].as_array().unwrap().len(), 5);
    // Echo and Fail: once by invoke, once prepared (0.3.6), per iteration.
    assert_eq!(
        (calls("Echo"), calls("Check"), calls("Fail"), calls("Watch")),
        (12.0, 6.0, 12.0, 6.0),
        "{served}"
    );
    let metric = |name: &str| summary["metrics"][name]["count"].as_f64().unwrap_or(0.0);
    assert_eq!(
        metric("grpc_reqs"),
        calls("Echo") + calls("Check") + calls("Fail"),
        "{}",
        summary["metrics"]
    );
    assert_eq!(metric("grpc_streams"), 6.0);
    assert_eq!(
        metric("grpc_streams_msgs_received"),
        served["stream_sent"].as_f64().unwrap()
    );
    let reflected = served["reflection_requests"].as_f64().unwrap();
    assert!(reflected >= 2.0, "{served}");
    assert_eq!(served["reflect_tokens"]["py"].as_f64(), Some(reflected));
}
