//! Files that are not plugins of this host's contract are refused with a message that
//! says what is wrong.

use crate::support as common;

use std::path::Path;

async fn inspect_error(path: &Path) -> String {
    match host::inspect(path, 64 << 20).await {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(e) => format!("{e:#}"),
    }
}

#[tokio::test]
async fn plugin_of_another_wit_version_is_refused_naming_both_versions() {
    let err = inspect_error(&common::plugin("other_wit")).await;
    // Built against the previous contract (0.2.0), as with an older SDK.
    assert!(err.contains("loadtest:scenario@0.2.0"), "{err}");
    assert!(err.contains("loadtest:scenario@0.3.10"), "{err}");
    assert!(err.contains("rebuild the plugin"), "{err}");
}

#[tokio::test]
async fn core_module_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("core.wasm");
    // The smallest valid core module: magic and version 1.
    std::fs::write(&path, b"\0asm\x01\0\0\0").unwrap();
    let err = inspect_error(&path).await;
    assert!(
        err.contains("core WebAssembly module, not a component"),
        "{err}"
    );
}

#[tokio::test]
async fn non_wasm_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "just some text").unwrap();
    let err = inspect_error(&path).await;
    assert!(err.contains("is not a WebAssembly file"), "{err}");
}

#[tokio::test]
async fn missing_file_is_named() {
    let err = inspect_error(Path::new("/nonexistent/plugin.wasm")).await;
    assert!(
        err.contains("cannot read plugin /nonexistent/plugin.wasm"),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_exec_names_the_plugin_scenarios() {
    let config = r#"
        [scenarios.x]
        executor = "constant-vus"
        vus = 1
        duration = "1s"
        exec = "checkout"
    "#;
    let err = match common::run("notes", config, &[]).await {
        Ok(_) => panic!("ran with an unknown exec"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("no scenario `checkout`"), "{err}");
    assert!(err.contains("browse"), "{err}");
}

#[tokio::test]
async fn config_typo_suggests_the_option() {
    let config = r#"
        [scenarios.x]
        executor = "constant-vus"
        vu = 1
        duration = "1s"
    "#;
    let err = match common::run("hello", config, &[]).await {
        Ok(_) => panic!("ran with a typo"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("scenarios.x.vu"), "{err}");
    assert!(err.contains("did you mean `vus`"), "{err}");
}

#[tokio::test]
async fn component_of_another_world_says_what_it_exports() {
    let err = inspect_error(&common::plugin("not_a_plugin")).await;
    assert!(
        err.contains("does not export loadtest:scenario/plugin@0.3.10"),
        "{err}"
    );
    assert!(err.contains("wasi:cli/run"), "{err}");
}

#[tokio::test]
async fn missing_export_is_named() {
    let err = inspect_error(&common::plugin("missing_export")).await;
    assert!(err.contains("missing an export"), "{err}");
    assert!(err.contains("teardown"), "{err}");
}
