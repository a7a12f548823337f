//! Saved inputs and the messages they must produce, as Spin's manifest tests keep them
//! (crates/manifest/tests/ui/): each `tests/ui/NAME.in` beside this file is a run
//! config (TOML) that the parser refuses, and `NAME.err` is its message, word for word, as
//! `host run` prints it after `config error: `. A change to a message shows up here as
//! a diff to review; `BLESS=1 cargo test -p host --lib config::ui_tests` rewrites the
//! `.err` files after a change that was meant. The inputs are not named `.toml`, so
//! that the checks of the repository's run configs (the JSON Schema's) pass them by.

use super::{build, parse_toml, Overrides};
use std::path::{Path, PathBuf};

/// The folder of the pairs.
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config/tests/ui")
}

/// The message the config reader gives for `text` (a config it accepts fails the test).
fn message(name: &str, text: &str) -> String {
    let result = parse_toml(text, "run.toml")
        .map_err(|e| e.to_string())
        .and_then(|table| build(table, &Overrides::default()).map_err(|e| e.to_string()));
    match result {
        Ok(_) => format!("{name}.in was accepted; every input here must be refused\n"),
        Err(message) => message + "\n",
    }
}

#[test]
fn every_saved_input_gives_its_saved_message() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("the folder of config inputs")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    inputs.sort();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for input in &inputs {
        let name = input.file_stem().unwrap().to_string_lossy().into_owned();
        match input.extension().and_then(|e| e.to_str()) {
            Some("in") => {}
            Some("err") => {
                assert!(
                    input.with_extension("in").exists(),
                    "{name}.err has no {name}.in"
                );
                continue;
            }
            _ => panic!(
                "{} is neither an input (.in) nor a message (.err)",
                input.display()
            ),
        }
        let text = std::fs::read_to_string(input).unwrap();
        let got = message(&name, &text);
        let expected_path = input.with_extension("err");
        if got.ends_with("must be refused\n") {
            wrong.push(got);
            continue;
        }
        if bless {
            std::fs::write(&expected_path, &got).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{name}.in has no {name}.err (run with BLESS=1)"));
        if got != expected {
            wrong.push(format!("{name}:\n  expected: {expected}  got:      {got}"));
        }
        checked += 1;
    }
    assert!(wrong.is_empty(), "messages changed:\n{}", wrong.join("\n"));
    assert!(checked >= 20, "only {checked} saved inputs");
}
