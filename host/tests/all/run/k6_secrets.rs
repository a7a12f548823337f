//! `k6/secrets` with `--secret-source`, side by side with k6 1.1.0: a secret read from
//! a file source and printed by `console.log` shows `***SECRET_REDACTED***` on stderr
//! in both, and the value is in no file the host's run wrote (every file of the
//! results folder read whole, and the `--summary-export`), nor on its stdout; a missing
//! secret rejects with a clear error; named sources and the env source with a prefix.

use crate::support as common;

use common::k6::k6_in;
use common::output_text as text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SECRET: &str = "s3cr3t-7f2a9c41";
const SECOND: &str = "second-0b8e6d";

const SCRIPT: &str = r#"import secrets from 'k6/secrets';
import { check } from 'k6';
export default async function () {
  const v = await secrets.get('cool');
  console.log('the secret is ' + v);
  check(v, { ['check named ' + v]: (x) => x.length > 0 });
  try { await secrets.get('missing'); } catch (e) { console.log('missing: ' + e); }
  try { console.log('named ' + await secrets.source('two').get('cool')); } catch (e) { console.log('named: ' + e); }
  if (__ENV.THROW) throw new Error('thrown with ' + v);
}
"#;

fn host(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secrets.js"), SCRIPT).unwrap();
    std::fs::write(
        dir.path().join("one.secret"),
        format!("cool={SECRET}\nother=x\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("two.secret"), format!("cool={SECOND}\n")).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_read_and_redacted_everywhere_as_k6() {
    let dir = setup();
    let d = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        host(
            &d,
            &[
                "run",
                "secrets.js",
                "--secret-source",
                "file=one.secret",
                "--out",
                "results",
                "--summary-export",
                "export.json",
                "-e",
                "THROW=1",
            ],
            &[],
        )
    })
    .await
    .unwrap();
    let k6 = k6_in(
        dir.path(),
        vec![
            "secrets.js".into(),
            "-q".into(),
            "--secret-source=file=one.secret".into(),
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // k6 writes msg="..." with the quotes inside escaped.
    let k6_stderr = String::from_utf8_lossy(&k6.stderr).replace("\\\"", "\"");
    for (who, err) in [("host", &stderr), ("k6", &k6_stderr)] {
        assert!(
            err.contains("the secret is ***SECRET_REDACTED***"),
            "{who}: {err}"
        );
        assert!(err.contains("missing: no value"), "{who}: {err}");
        assert!(
            err.contains("named: no secret source with name \"two\" is configured"),
            "{who}: {err}"
        );
        assert!(!err.contains(SECRET), "{who}: {err}");
    }
    assert!(
        stderr
            .contains("missing: no value: secret \"missing\" is not in secret source \"default\""),
        "{stderr}"
    );
    // The exception's message is redacted in the error lines too.
    assert!(
        stderr.contains("thrown with ***SECRET_REDACTED***"),
        "{}",
        text(&out)
    );
    assert!(!stdout.contains(SECRET), "{stdout}");
    assert!(
        stdout.contains("check named ***SECRET_REDACTED***"),
        "{stdout}"
    );
    let mut written = files(&dir.path().join("results"));
    written.push(dir.path().join("export.json"));
    assert!(written.len() > 3, "{written:?}");
    for file in &written {
        let bytes = std::fs::read(file).unwrap();
        let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!found, "{} holds the secret", file.display());
    }
    let summary = common::summary_json(&common::only_results_dir(&dir.path().join("results")));
    assert!(
        summary["checks"]
            .to_string()
            .contains("check named ***SECRET_REDACTED***"),
        "{}",
        summary["checks"]
    );
}

/// Named sources with a default, and the env source with a prefix (read from the
/// host's environment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_sources_and_the_env_source() {
    let dir = setup();
    let d = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        host(
            &d,
            &[
                "run",
                "secrets.js",
                "-q",
                "--out",
                "results",
                "--secret-source",
                "env=prefix=MY_SECRET_,name=envs,default",
                "--secret-source",
                "file=name=two,filename=two.secret",
            ],
            &[("MY_SECRET_cool", SECRET)],
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the secret is ***SECRET_REDACTED***"),
        "{stderr}"
    );
    assert!(stderr.contains("named ***SECRET_REDACTED***"), "{stderr}");
    assert!(
        !stderr.contains(SECRET) && !stderr.contains(SECOND),
        "{stderr}"
    );
    assert!(
        stderr.contains("missing: no value: secret \"missing\" is not in secret source \"envs\""),
        "{stderr}"
    );
}

/// No source: the script's get() rejects saying how to give one; a source that
/// cannot be read, or written wrong, stops the run before it starts with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_bad_sources_are_clear_errors() {
    let dir = setup();
    let d = dir.path().to_path_buf();
    let (none, unreadable, two_defaults) = tokio::task::spawn_blocking(move || {
        (
            host(&d, &["run", "secrets.js", "-q", "--out", "results"], &[]),
            host(
                &d,
                &["run", "secrets.js", "--secret-source", "file=nope.secret"],
                &[],
            ),
            host(
                &d,
                &[
                    "run",
                    "secrets.js",
                    "--secret-source",
                    "file=name=a,filename=one.secret,default",
                    "--secret-source",
                    "file=name=b,filename=two.secret,default",
                ],
                &[],
            ),
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(
        stderr.contains(
            "no secret sources are configured (run with --secret-source file=PATH, or env)"
        ),
        "{}",
        text(&none)
    );
    assert_eq!(unreadable.status.code(), Some(2), "{}", text(&unreadable));
    assert!(
        String::from_utf8_lossy(&unreadable.stderr).contains("cannot read nope.secret"),
        "{}",
        text(&unreadable)
    );
    assert!(!two_defaults.status.success());
    assert!(
        String::from_utf8_lossy(&two_defaults.stderr)
            .contains("more than one --secret-source is marked default"),
        "{}",
        text(&two_defaults)
    );
}
