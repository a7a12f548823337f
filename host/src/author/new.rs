//! `host new`: writes a Rust plugin project that builds out of the box — a working
//! scenario, its default config, a README, the wasm32-wasip2 target, and the SDK.
//!
//! The SDK is vendored (copied into `sdk/`), not a path or git dependency: a path into
//! this checkout breaks as soon as the folder moves to another machine or team, and
//! there is no public git or registry release to point at. A vendored copy builds
//! wherever the folder goes, with the exact SDK of the host that made it, whose WIT
//! version that host accepts. The dependency versions come with it: the plugins
//! workspace's Cargo.lock is written too, so the first build needs no registry lookup
//! for versions (cargo prunes what the project does not use).

use super::{sdk, templates, Lang, NewArgs};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// What `host new` made.
#[derive(Debug)]
pub(crate) struct Created {
    /// The project folder.
    pub dir: PathBuf,
    /// The plugin's (and crate's) name.
    pub name: String,
    /// What `--from-har` found, when given.
    pub imported: Option<super::har::Imported>,
}

/// Creates the project `args.path` asks for.
pub(crate) fn create(args: &NewArgs) -> Result<Created> {
    let name = plugin_name(&args.path)?;
    let dir = args.path.clone();
    if dir.exists() {
        let empty = std::fs::read_dir(&dir)
            .with_context(|| format!("{} exists and cannot be read", dir.display()))?
            .next()
            .is_none();
        if !empty {
            bail!(
                "{} already exists and is not empty; choose a new folder for the plugin",
                dir.display()
            );
        }
    }
    let write = |rel: &str, text: &str| -> Result<()> {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let fill = |t: &str| templates::render(t, &name);
    if let Some(har) = &args.from_har {
        let opts = super::har::plan::Options {
            keep_origins: args.keep_origin.clone(),
        };
        let imported = super::har::write(&dir, &name, har, args.lang, &opts)?;
        return Ok(Created {
            dir,
            name,
            imported: Some(imported),
        });
    }
    if args.lang == Lang::Js {
        write("script.js", &fill(templates::JS_SCRIPT))?;
        write("README.md", &fill(templates::JS_README))?;
        write(".gitignore", "*.wasm\n")?;
        return Ok(Created {
            dir,
            name,
            imported: None,
        });
    }
    if args.lang == Lang::Python {
        // The example plugin is the template: the scaffold is what CI builds and runs.
        let app = sdk::PY_EXAMPLE_APP.replace("hello-py", &name);
        write("app.py", &app)?;
        write("README.md", &fill(templates::PY_README))?;
        write(".gitignore", templates::PY_GITIGNORE)?;
        sdk::write_python_sdk(&dir)?;
        return Ok(Created {
            dir,
            name,
            imported: None,
        });
    }
    write("Cargo.toml", &fill(templates::CARGO_TOML))?;
    write("Cargo.lock", sdk::PLUGINS_LOCK)?;
    write(".cargo/config.toml", templates::CARGO_CONFIG)?;
    write("run.toml", templates::RUN_TOML)?;
    write("src/lib.rs", &fill(templates::LIB_RS))?;
    write("README.md", &fill(templates::README))?;
    write(".gitignore", templates::GITIGNORE)?;
    for (rel, text) in sdk::SDK_FILES {
        write(&format!("sdk/{rel}"), text)?;
    }
    Ok(Created {
        dir,
        name,
        imported: None,
    })
}

/// `host new`: creates the project and says what to do next; returns the exit code.
pub(crate) fn run(args: &NewArgs) -> Result<i32> {
    let created = create(args)?;
    let dir = created.dir.display();
    println!("created plugin {} in {dir}", created.name);
    if let Some(imported) = &created.imported {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        println!(
            "  from the recording: {} step{}, {} request{}",
            imported.steps,
            plural(imported.steps),
            imported.requests,
            plural(imported.requests)
        );
        for line in &imported.summary {
            // Recording text: no terminal escapes reach the operator's screen.
            println!("  {}", super::har::escape::terminal(line));
        }
        if args.lang == Lang::Js {
            println!("  run it:    host run {dir}/script.js --config {dir}/run.toml");
            return Ok(0);
        }
    }
    if args.lang == Lang::Js {
        println!("  run it:    host run {dir}/script.js -e BASE_URL=http://127.0.0.1:8080");
        println!("  build it:  host build {dir}/script.js   (writes script.wasm)");
        return Ok(0);
    }
    println!("  build it:  host build {dir}");
    println!(
        "  run it:    host run <the path host build prints> -e BASE_URL=http://127.0.0.1:8080"
    );
    Ok(0)
}

/// The plugin's name: the folder's last part, which must be a valid crate name.
fn plugin_name(path: &Path) -> Result<String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} does not end in a folder name", path.display()))?;
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!(
            "{name:?} cannot name a plugin: use letters, digits, `-` and `_`, starting with a letter (e.g. checkout-flow)"
        );
    }
    // Cargo refuses these as package names.
    if [
        "test",
        "core",
        "std",
        "alloc",
        "proc_macro",
        "sdk",
        "loadtest",
        "loadtest-sdk",
    ]
    .contains(&name)
    {
        bail!("{name:?} is reserved (by Rust or the SDK); choose another plugin name");
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(
            plugin_name(Path::new("../a/checkout-flow")).unwrap(),
            "checkout-flow"
        );
        for bad in ["1x", "a b", "é", "test"] {
            let err = plugin_name(Path::new(bad)).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }
}
