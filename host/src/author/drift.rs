//! A plugin project's `run.toml` against the default config built into its
//! component: `host new` compiles `run.toml` into the plugin (`describe()`), so an
//! edit to the file does nothing until the next build. A run of a component that
//! lives in such a project (or of the project itself) says so, instead of silently
//! running the old config.

use std::path::{Path, PathBuf};

/// How far above a component its project may be: `target/wasm32-wasip2/release/x.wasm`
/// is three folders below a Rust project, `target/x.wasm` one below a Python one.
const MAX_DEPTH: usize = 4;

/// The plugin project that `plugin` (a component, or a project folder) belongs to:
/// the nearest folder at or above it with a `run.toml` beside a `Cargo.toml` or an
/// `app.py`.
pub(crate) fn project_of(plugin: &Path) -> Option<PathBuf> {
    let start = plugin.canonicalize().ok()?;
    let start = if start.is_dir() {
        start
    } else {
        start.parent()?.to_path_buf()
    };
    start.ancestors().take(MAX_DEPTH + 1).find_map(|dir| {
        let is_project = dir.join("run.toml").is_file()
            && (dir.join("Cargo.toml").is_file() || dir.join("app.py").is_file());
        is_project.then(|| dir.to_path_buf())
    })
}

/// The warning for a run of `plugin` whose project's `run.toml` differs from
/// `built_in` (the default config its `describe()` returned); `None` when they agree
/// (as TOML: comments and layout aside), when the plugin is in no project, or when the
/// run is given that very file (`--config run.toml`).
pub(crate) fn run_toml_drift(plugin: &Path, built_in: &str, configs: &[&Path]) -> Option<String> {
    let dir = project_of(plugin)?;
    let file = dir.join("run.toml");
    let given = configs
        .iter()
        .any(|c| c.canonicalize().ok().as_deref() == Some(file.as_path()));
    if given {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let same = match (
        toml::from_str::<toml::Table>(&text),
        toml::from_str::<toml::Table>(built_in),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => text.trim() == built_in.trim(),
    };
    if same {
        return None;
    }
    let shown = dir.display();
    Some(format!(
        "{shown}/run.toml differs from the default config built into {} (edited since the \
         last build?); this run uses the built-in one. Rebuild it (`host build {shown}`; \
         `host run {shown}` builds the folder when its sources changed), or pass the file: \
         --config {shown}/run.toml",
        plugin.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(run_toml: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
        std::fs::write(dir.path().join("run.toml"), run_toml).unwrap();
        let release = dir.path().join("target/wasm32-wasip2/release");
        std::fs::create_dir_all(&release).unwrap();
        let wasm = release.join("p.wasm");
        std::fs::write(&wasm, b"\0asm").unwrap();
        (dir, wasm)
    }

    const BUILT: &str =
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"10s\"\n";

    #[test]
    fn an_edited_run_toml_is_named_with_the_way_to_use_it() {
        let (dir, wasm) = project(&BUILT.replace("vus = 1", "vus = 20"));
        let warning = run_toml_drift(&wasm, BUILT, &[]).expect("a warning");
        let root = dir.path().canonicalize().unwrap();
        assert!(
            warning.starts_with(&format!(
                "{}/run.toml differs from the default config built into",
                root.display()
            )) && warning.contains(&format!("--config {}/run.toml", root.display())),
            "{warning}"
        );
        // Given as --config, the file is what runs: nothing to say.
        let file = dir.path().join("run.toml");
        assert_eq!(run_toml_drift(&wasm, BUILT, &[file.as_path()]), None);
        // The project folder itself is found too.
        assert!(run_toml_drift(dir.path(), BUILT, &[]).is_some());
    }

    #[test]
    fn the_same_config_written_otherwise_and_plugins_in_no_project_say_nothing() {
        let (_dir, wasm) = project(&format!("# my comment\n{}", BUILT.replace(" = ", "=")));
        assert_eq!(run_toml_drift(&wasm, BUILT, &[]), None);
        let lone = tempfile::tempdir().unwrap();
        let wasm = lone.path().join("p.wasm");
        std::fs::write(&wasm, b"\0asm").unwrap();
        assert_eq!(run_toml_drift(&wasm, BUILT, &[]), None);
    }
}
