//! A new team's first plugin: `host new`, `host build`, `host inspect` and `host run`
//! as a user types them, the project made in a temp folder outside this repository; and
//! a run config that pins a plugin refusing any other file.

use crate::support as common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn host(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the host binary runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The plugins workspace's target folder: the new project builds there so the SDK's
/// dependencies, already compiled for the bundled plugins, are not compiled again.
fn shared_target_dir() -> PathBuf {
    Path::new(host::PLUGINS_DIR)
        .ancestors()
        .nth(2)
        .expect("PLUGINS_DIR is plugins/target/wasm32-wasip2/release")
        .to_path_buf()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_plugin_builds_and_runs_against_the_demo_target() {
    let tmp = tempfile::tempdir().unwrap();
    let made = host(tmp.path(), &["new", "team-probe"]);
    assert!(made.status.success(), "{}", text(&made));
    let project = tmp.path().join("team-probe");
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        "src/lib.rs",
        "run.toml",
        "README.md",
        "sdk/Cargo.toml",
        "sdk/src/lib.rs",
        "sdk/wit/scenario.wit",
    ] {
        assert!(project.join(file).is_file(), "host new wrote no {file}");
    }
    // The vendored contract is the one this host implements.
    assert_eq!(
        std::fs::read(project.join("sdk/wit/scenario.wit")).unwrap(),
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/scenario.wit")).unwrap()
    );
    // A second `new` into the same folder is refused, not merged.
    let again = host(tmp.path(), &["new", "team-probe"]);
    assert!(!again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("not empty"), "{}", text(&again));

    // A team names its repository; the URL goes into the component with the README.
    let manifest = project.join("Cargo.toml");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let named = original.replace("# repository = ", "repository = ");
    assert_ne!(original, named, "the scaffold offers a repository line");
    std::fs::write(&manifest, named).unwrap();

    let built = Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(&project)
        .arg("build")
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built));
    let stdout = String::from_utf8(built.stdout.clone()).unwrap();
    let component = PathBuf::from(stdout.trim());
    assert!(
        component.ends_with("wasm32-wasip2/release/team_probe.wasm") && component.is_file(),
        "host build printed {stdout:?}"
    );

    let inspected = host(tmp.path(), &["inspect", component.to_str().unwrap()]);
    assert!(inspected.status.success(), "{}", text(&inspected));
    let shown = text(&inspected);
    let sha256 = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(&component).unwrap()))
    };
    for expected in [
        "name:        team-probe",
        "version:     0.1.0",
        &format!("sha256:      {sha256}"),
        "built against: 0.3.10",
        "uses:        ",
        "http",
        "executor = \"constant-vus\"",
        "source:      https://git.example.com/your-team/team-probe",
        "readme:\n  # team-probe",
    ] {
        assert!(shown.contains(expected), "no {expected:?} in\n{shown}");
    }

    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let out = tmp.path().join("results");
    let base_url = format!("BASE_URL={}", target.base_url());
    let component_arg = component.to_str().unwrap().to_string();
    let out_arg = out.to_str().unwrap().to_string();
    let dir = tmp.path().to_path_buf();
    let ran = tokio::task::spawn_blocking(move || {
        host(
            &dir,
            &[
                "run",
                &component_arg,
                "--vus",
                "3",
                "--iterations",
                "60",
                "-e",
                &base_url,
                "--out",
                &out_arg,
                "--quiet",
            ],
        )
    })
    .await
    .unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let served = target.requests_served() - before;
    let summary = common::counted_and_served(&out, served, 60);
    let check = &summary["checks"][0];
    assert_eq!(check["name"], "status is 200", "{}", summary["checks"]);
    assert_eq!(
        (check["passes"].as_u64(), check["fails"].as_u64()),
        (Some(60), Some(0)),
        "every check passed: {check}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_plugin_refuses_another_file() {
    let tmp = tempfile::tempdir().unwrap();
    let hello = common::plugin("hello");
    let copy = tmp.path().join("hello.wasm");
    std::fs::copy(&hello, &copy).unwrap();
    let actual = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(&copy).unwrap()))
    };
    let target = common::demo_target(Duration::ZERO).await;
    let run_with = |file: &str, pinned: &str| {
        let config = common::write_config(
            tmp.path(),
            &format!(
                "plugin = {{ path = \"{file}\", sha256 = \"{pinned}\" }}\n\
                 [scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 1\niterations = 5\n\
                 [env]\nBASE_URL = \"{}\"\n",
                target.base_url()
            ),
        );
        let request = host::RunRequest {
            plugin: copy.clone(),
            config: Some(config),
            out: tmp.path().join("results"),
            quiet: true,
            handle_signals: false,
            ..Default::default()
        };
        host::run(request)
    };

    let wrong = "0".repeat(64);
    let err = match run_with("hello.wasm", &wrong).await {
        Ok(_) => panic!("a file that does not match its pin ran"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains(&wrong) && err.contains(&actual),
        "both hashes named: {err}"
    );
    assert_eq!(target.requests_served(), 0, "nothing ran: {err}");
    assert!(
        !tmp.path().join("results").exists(),
        "no results for a refused run"
    );

    // The right hash, but the pin names another file than the one given.
    let err = match run_with("checkout.wasm", &actual).await {
        Ok(_) => panic!("a file other than the pinned path ran"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains("checkout.wasm") && err.contains("hello.wasm"),
        "both files named: {err}"
    );
    assert_eq!(target.requests_served(), 0, "nothing ran: {err}");

    // The matching pin runs.
    let outcome = run_with("hello.wasm", &actual)
        .await
        .expect("the pinned file runs");
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(target.requests_served(), 5);
}

/// `host run DIR` from `tmp` (results under `out`), building with the shared target
/// folder; the output.
fn run_dir(tmp: &Path, plugin: &Path, base_url: &str, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(tmp)
        .arg("run")
        .arg(plugin)
        .args(["--iterations", "4", "-e"])
        .arg(format!("BASE_URL={base_url}"))
        .arg("--out")
        .arg(out)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .output()
        .unwrap()
}

/// The newest results folder under `out` (the store of runs, runs.db, sits beside them).
fn newest(out: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.pop().expect("a results folder")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_dir_builds_a_project_only_when_it_changed_and_names_an_edited_run_toml() {
    let tmp = tempfile::tempdir().unwrap();
    let made = host(tmp.path(), &["new", "dir-run"]);
    assert!(made.status.success(), "{}", text(&made));
    let project = tmp.path().join("dir-run");
    let target = common::demo_target(Duration::ZERO).await;
    let base = target.base_url();
    let out = tmp.path().join("results");
    let (t, p, b, o) = (
        tmp.path().to_path_buf(),
        project.clone(),
        base.clone(),
        out.clone(),
    );
    let run = move || {
        let (t, p, b, o) = (t.clone(), p.clone(), b.clone(), o.clone());
        tokio::task::spawn_blocking(move || run_dir(&t, &p, &b, &o))
    };

    // First: built, then run.
    let first = run().await.unwrap();
    assert!(first.status.success(), "{}", text(&first));
    let said = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(
        said.contains("building ") && said.contains("built "),
        "{said}"
    );
    let summary = common::summary_json(&newest(&out));
    assert_eq!(summary["metrics"]["http_reqs"]["count"], 4.0);

    // Unchanged: no build at all.
    let second = run().await.unwrap();
    assert!(second.status.success(), "{}", text(&second));
    let said = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(
        said.contains("sources unchanged since the last build") && !said.contains("building "),
        "{said}"
    );

    // An edited run.toml is a changed source: built again, and the new config runs.
    let run_toml = project.join("run.toml");
    let original = std::fs::read_to_string(&run_toml).unwrap();
    std::fs::write(&run_toml, original.replace("vus = 2", "vus = 3")).unwrap();
    let third = run().await.unwrap();
    assert!(third.status.success(), "{}", text(&third));
    let said = String::from_utf8_lossy(&third.stderr).into_owned();
    assert!(
        said.contains("its sources changed since the last build"),
        "{said}"
    );
    let summary = common::summary_json(&newest(&out));
    assert_eq!(
        summary["config"]["scenarios"]["default"]["vus"], 3,
        "{}",
        summary["config"]
    );

    // Edited again, and the component run as a file (where cargo writes it by
    // default) without a build: the run says its run.toml is not the one built in.
    std::fs::write(&run_toml, original.replace("vus = 2", "vus = 5")).unwrap();
    let stamp = std::fs::read_to_string(project.join("target/host-build.stamp")).unwrap();
    let built = PathBuf::from(stamp.lines().nth(1).unwrap());
    let release = project.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&release).unwrap();
    let component = release.join("dir_run.wasm");
    std::fs::copy(&built, &component).unwrap();
    let fourth = tokio::task::spawn_blocking({
        let (t, b, o) = (tmp.path().to_path_buf(), base.clone(), out.clone());
        move || run_dir(&t, &component, &b, &o)
    })
    .await
    .unwrap();
    assert!(fourth.status.success(), "{}", text(&fourth));
    let said = String::from_utf8_lossy(&fourth.stderr).into_owned();
    let root = project.canonicalize().unwrap();
    let warning = format!(
        "{}/run.toml differs from the default config built into",
        root.display()
    );
    assert!(said.contains(&warning), "{said}");
    let summary = common::summary_json(&newest(&out));
    assert_eq!(summary["config"]["scenarios"]["default"]["vus"], 3);
    assert!(
        summary["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(&warning)),
        "{}",
        summary["warnings"]
    );
}
