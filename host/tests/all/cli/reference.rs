//! The command line's reference stays true: every command and flag the README and
//! docs/ show exists in `--help`, every `--help` flag is documented there; the shell
//! completions and the man page come from the same definitions; `host schema` accepts
//! every run config of the repository and every bundled plugin's default config.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

fn stdout_of(args: &[&str]) -> String {
    let out = host().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "host {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// README.md and every docs/*.md, with their names.
fn documents() -> Vec<(String, String)> {
    let root = repo();
    let mut docs = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    )];
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for path in files {
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
            docs.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    docs
}

/// The subcommands `--help` lists under "Commands:".
fn commands_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags `--help` lists (the option lines, not the prose).
fn flags_in(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = match l.strip_prefix('-') {
                Some(rest) if !rest.starts_with('-') => rest.get(3..)?.trim_start(),
                _ => l,
            };
            let name = l.strip_prefix("--")?;
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(name.len());
            Some(name[..end].to_string())
        })
        .filter(|f| !f.is_empty())
        .collect()
}

/// Every command path (`run`, `k8s render`) and the flags its `--help` lists.
fn help_tree() -> BTreeMap<String, BTreeSet<String>> {
    let top = stdout_of(&["--help"]);
    let mut tree = BTreeMap::new();
    tree.insert(String::new(), flags_in(&top));
    for command in commands_in(&top) {
        let help = stdout_of(&[&command, "--help"]);
        let subs = commands_in(&help);
        if subs.is_empty() {
            tree.insert(command.clone(), flags_in(&help));
        }
        for sub in subs {
            let help = stdout_of(&[&command, &sub, "--help"]);
            tree.insert(format!("{command} {sub}"), flags_in(&help));
        }
    }
    tree
}

/// `host ...` command lines the documents show: lines of code blocks (with their
/// indented continuation lines) and inline code spans, each with where it is.
fn shown_commands(docs: &[(String, String)]) -> Vec<(String, String)> {
    let mut shown = Vec::new();
    for (name, text) in docs {
        let mut in_block = false;
        let mut current: Option<(String, String)> = None;
        for (n, line) in text.lines().enumerate() {
            let place = format!("{name}:{}", n + 1);
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                shown.extend(current.take());
                continue;
            }
            if in_block {
                let bare = line.trim_start().trim_start_matches("$ ");
                if bare.starts_with("host ") {
                    shown.extend(current.take());
                    current = Some((place, bare.to_string()));
                } else if line.starts_with(' ') && line.trim_start().starts_with('[') {
                    if let Some((_, command)) = &mut current {
                        command.push(' ');
                        command.push_str(line.trim());
                    }
                } else {
                    shown.extend(current.take());
                }
                continue;
            }
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1 && span.starts_with("host ") {
                    shown.push((place.clone(), span.to_string()));
                }
            }
        }
        shown.extend(current);
    }
    shown
}

/// The command path of a shown line (`k8s render` for `host k8s render ...`), if its
/// first word is written as a command name.
fn command_of(line: &str, tree: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    let mut words = line.split_whitespace().skip(1);
    let first = words.next()?;
    if first.starts_with('-') {
        return Some(String::new());
    }
    if !first.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        return None;
    }
    let two = format!("{first} {}", words.next().unwrap_or(""));
    if tree.contains_key(&two) {
        Some(two)
    } else {
        Some(first.to_string())
    }
}

fn long_flags(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 2..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len());
        let flag = &rest[..end];
        if flag.len() > 1 && flag.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            flags.insert(flag.to_string());
        }
    }
    flags
}

#[test]
fn every_command_and_flag_the_docs_show_exists_in_help() {
    let tree = help_tree();
    let docs = documents();
    let shown = shown_commands(&docs);
    assert!(shown.len() > 20, "too few command lines found: {shown:?}");
    let global = &tree[""];
    let mut wrong = Vec::new();
    for (place, line) in &shown {
        let Some(command) = command_of(line, &tree) else {
            continue;
        };
        let Some(flags) = tree.get(&command) else {
            wrong.push(format!(
                "{place}: `host {command}` is not a command: {line}"
            ));
            continue;
        };
        // The run flags after the plugin of `k8s render` and `coordinate` are `host
        // run`'s (`[run flags]`).
        let run = &tree["run"];
        for flag in long_flags(line) {
            let known = flags.contains(&flag)
                || global.contains(&flag)
                || (matches!(command.as_str(), "k8s render" | "coordinate") && run.contains(&flag));
            if !known {
                wrong.push(format!("{place}: `host {command}` has no --{flag}: {line}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_help_flag_is_documented() {
    let tree = help_tree();
    let text: String = documents().into_iter().map(|(_, t)| t + "\n").collect();
    let documented = long_flags(&text);
    let mut missing = Vec::new();
    for (command, flags) in &tree {
        for flag in flags {
            if flag == "help" || flag == "version" {
                continue;
            }
            if !documented.contains(flag) {
                missing.push(format!("host {command} --{flag}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags of --help that neither README.md nor docs/ mention:\n{}",
        missing.join("\n")
    );
    for command in tree.keys().filter(|c| !c.is_empty()) {
        assert!(
            text.contains(&format!("host {command}")),
            "`host {command}` is not shown in README.md or docs/"
        );
    }
}

#[test]
fn completions_and_the_man_page_cover_every_command() {
    let tree = help_tree();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for command in tree.keys().filter(|c| !c.is_empty() && !c.contains(' ')) {
            assert!(script.contains(command.as_str()), "{shell}: no {command}");
        }
        assert!(script.contains("summary-export"), "{shell}");
    }
    let out = host().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    let man = stdout_of(&["man"]);
    assert!(man.starts_with(".ie") || man.contains(".TH host"), "{man}");
    for command in tree.keys().filter(|c| !c.is_empty() && !c.contains(' ')) {
        assert!(man.contains(command.as_str()), "man: no {command}");
    }
    let dir = tempfile::tempdir().unwrap();
    stdout_of(&["man", "--dir", dir.path().to_str().unwrap()]);
    let page = std::fs::read_to_string(dir.path().join("host-run.1")).unwrap();
    assert!(page.contains("summary\\-export"), "{page}");
}

/// Every run config file of the repository (not Cargo's), by path.
fn repository_configs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if name.ends_with(".toml")
                && !matches!(
                    name.as_str(),
                    "Cargo.toml" | "pyproject.toml" | "rustfmt.toml" | "clippy.toml"
                )
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), &mut out);
    out.sort();
    out
}

/// The ```toml blocks of README.md and docs/ that are run configs (they start with a
/// section the config knows), with where they are.
fn documented_configs(sections: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, text) in documents() {
        let mut block: Option<(usize, String)> = None;
        for (n, line) in text.lines().enumerate() {
            match &mut block {
                None if line.trim_start().starts_with("```toml") => {
                    block = Some((n + 1, String::new()))
                }
                None => {}
                Some((start, body)) if line.trim_start().starts_with("```") => {
                    let first = body
                        .lines()
                        .map(str::trim)
                        .find(|l| l.starts_with('['))
                        .unwrap_or("");
                    let section = first
                        .trim_start_matches('[')
                        .split(['.', ']'])
                        .next()
                        .unwrap_or("");
                    if sections.contains(section) {
                        out.push((format!("{name}:{start}"), std::mem::take(body)));
                    }
                    block = None;
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

fn validator() -> (boon::Schemas, boon::SchemaIndex, serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(&stdout_of(&["schema"])).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("run.schema.json", schema.clone())
        .unwrap();
    let index = compiler.compile("run.schema.json", &mut schemas).unwrap();
    (schemas, index, schema)
}

fn check(
    (schemas, index): (&boon::Schemas, boon::SchemaIndex),
    origin: &str,
    toml_text: &str,
) -> Result<(), String> {
    let table: toml::Table =
        toml::from_str(toml_text).map_err(|e| format!("{origin}: not TOML: {e}"))?;
    let json = serde_json::to_value(&table).unwrap();
    schemas
        .validate(&json, index)
        .map_err(|e| format!("{origin}: {e:#}"))
}

#[tokio::test]
async fn the_schema_accepts_every_config_of_the_repository_and_the_plugins() {
    let (schemas, index, schema) = validator();
    let sections: BTreeSet<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in repository_configs() {
        let text = std::fs::read_to_string(&path).unwrap();
        let origin = path.strip_prefix(repo()).unwrap().display().to_string();
        failures.extend(check((&schemas, index), &origin, &text).err());
        checked += 1;
    }
    let documented = documented_configs(&sections);
    assert!(!documented.is_empty(), "no ```toml run config in the docs");
    for (origin, text) in &documented {
        failures.extend(check((&schemas, index), origin, text).err());
        checked += 1;
    }
    // Every example plugin's default config, as its describe() gives it (the plugins
    // with a folder of their own in plugins/; the fixtures are broken on purpose;
    // js-runtime is the JavaScript runtime, a plugin only once a script is in it).
    let mut plugins: Vec<PathBuf> = std::fs::read_dir(repo().join("plugins"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().replace('-', "_"))
        .filter(|name| name != "sdk" && name != "js_runtime")
        .map(|name| PathBuf::from(host::PLUGINS_DIR).join(format!("{name}.wasm")))
        .collect();
    plugins.sort();
    assert!(plugins.len() >= 5, "{plugins:?}");
    for plugin in &plugins {
        let inspected = host::inspect(plugin, 64 << 20).await.unwrap();
        let origin = format!("{} default config", plugin.display());
        failures.extend(check((&schemas, index), &origin, &inspected.info.default_config).err());
        checked += 1;
    }
    // The run.toml `host new` writes, and the Python example's (the template of
    // `host new --lang python`), which keeps it in app.py.
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("shop");
    stdout_of(&["new", project.to_str().unwrap()]);
    let text = std::fs::read_to_string(project.join("run.toml")).unwrap();
    failures.extend(check((&schemas, index), "host new", &text).err());
    let app = std::fs::read_to_string(repo().join("plugins/python/hello_py/app.py")).unwrap();
    let python = app
        .split_once("DEFAULT_CONFIG = \"\"\"")
        .and_then(|(_, rest)| rest.split_once("\"\"\""))
        .map(|(config, _)| config)
        .expect("app.py has a DEFAULT_CONFIG");
    failures.extend(check((&schemas, index), "hello_py DEFAULT_CONFIG", python).err());
    checked += 2;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 15, "only {checked} configs checked");
}

#[test]
fn the_schema_refuses_what_the_config_reader_refuses() {
    let (schemas, index, _) = validator();
    let v = (&schemas, index);
    let good = "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"5s\"\n";
    check(v, "good", good).unwrap();
    for bad in [
        "[scenarios.a]\nexecutor = \"constant-vu\"\n",
        "[scenarios.a]\nexecutor = \"constant-vus\"\nvuss = 2\n",
        "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 0\n",
        "[limits]\nmemory_mb = 0\n",
        "[tresholds]\n",
        "[thresholds]\nhttp_req_duration = []\n",
        "[thresholds]\nhttp_req_duration = 5\n",
        "[tls]\ntls_version = \"tls1.1\"\n",
        "[http]\nversions = [\"h3-29\"]\n",
        "[stack]\non_service_exit = \"ignore\"\n",
    ] {
        assert!(check(v, "bad", bad).is_err(), "the schema took:\n{bad}");
        let table: toml::Table = toml::from_str(bad).unwrap();
        let with_scenario = host::merge_config(toml::from_str(good).unwrap(), table);
        assert!(
            host::build_config(with_scenario, &host::Overrides::default()).is_err(),
            "the config reader took:\n{bad}"
        );
    }
}
