//! `host k8s render`: writes the Kubernetes manifests of a distributed run (see
//! [`manifests`]) for `kubectl apply -f`. No cluster is needed to render them.

pub(crate) mod manifests;

use anyhow::{bail, Context, Result};
use manifests::{Manifests, Plan};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most bytes a ConfigMap may hold (Kubernetes refuses larger objects).
const CONFIG_MAP_LIMIT: usize = 1 << 20;

/// The ConfigMap key of a plugin shipped as a file.
const PLUGIN_KEY: &str = "plugin.wasm";

/// Run flags whose value is a file the coordinator must read in its pod.
const FILE_FLAGS: &[&str] = &["-c", "--config", "--env-file"];

/// Run flags giving the plugin's environment: their values go into a Secret.
const ENV_FLAGS: &[&str] = &["-e", "--env"];

/// Run flags the manifests set themselves, or that make no sense in a pod.
const REFUSED_FLAGS: &[&str] = &[
    "--out",
    "--execution-segment",
    "--execution-segment-sequence",
    "--stack",
];

/// `host k8s render`.
#[derive(clap::Args, Debug)]
pub(crate) struct RenderArgs {
    /// How many worker pods (the Indexed Job's completions); worker `i` runs the
    /// `i`-th of that many equal execution segments.
    #[arg(long)]
    pub workers: u32,
    /// The host's image; its entrypoint must be the `host` binary.
    #[arg(long, default_value = "loadtest/host:latest")]
    pub image: String,
    /// Prefix of the objects' names (a DNS label).
    #[arg(long, default_value = "loadtest")]
    pub name: String,
    /// Namespace of the objects (default: kubectl's current one).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Port the coordinator listens on, behind its Service.
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
    /// `yaml` (documents one after another) or `json` (a v1 List).
    #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub format: String,
    /// Write here instead of to standard output (not `--out`: that is a run flag).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The cluster token for the manifests' Secret (else HOST_CLUSTER_TOKEN; without
    /// either, a random one is made).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The plugin component (.wasm), shipped to the coordinator in a ConfigMap; or a
    /// registry reference (`registry/team/checkout:1.2.0`, after `host push`), which the
    /// coordinator and its workers pull themselves: a k6 script's component (~3 MB)
    /// goes this way, a ConfigMap holding at most 1 MiB.
    pub plugin: PathBuf,
    /// Flags for the run, as `host run` takes them (`--vus 10 -c run.toml -e K=V`):
    /// files they name are shipped in the ConfigMap too.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN_FLAGS"
    )]
    pub run_flags: Vec<String>,
}

/// Renders the manifests `args` ask for; `check_flags` refuses run flags that `host
/// run` would refuse (given the flags, it returns clap's error).
pub(crate) fn render_command(
    args: RenderArgs,
    check_flags: impl Fn(&[String]) -> Result<(), clap::Error>,
) -> Result<()> {
    let plan = plan(&args, check_flags)?;
    let manifests = manifests::render(&plan);
    let text = serialize(&manifests, &args.format)?;
    match &args.output {
        // 0600: the Secret's values are in it.
        Some(path) => crate::files::create_private(path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(())
}

/// Checks the arguments and reads the files into a [`Plan`].
pub(crate) fn plan(
    args: &RenderArgs,
    check_flags: impl Fn(&[String]) -> Result<(), clap::Error>,
) -> Result<Plan> {
    if args.workers == 0 {
        bail!("--workers must be at least 1");
    }
    if !is_dns_label(&args.name) || args.name.len() > 40 {
        bail!(
            "--name {:?} must be a DNS label of at most 40 characters (lower-case letters, \
             digits and '-', starting with a letter): it prefixes the objects' names",
            args.name
        );
    }
    if let Some(flag) = args.run_flags.iter().find(|f| {
        REFUSED_FLAGS
            .iter()
            .any(|r| *f == r || f.starts_with(&format!("{r}=")))
    }) {
        bail!(
            "{flag} cannot be given here: the coordinator writes its results to {} and \
             hands each worker its segment",
            manifests::RESULTS_DIR
        );
    }
    check_flags(&args.run_flags)
        .map_err(|e| anyhow::anyhow!("the run flags: {}", e.to_string().trim_end()))?;
    if crate::author::js::is_script(&args.plugin) {
        bail!(
            "{} is a k6 script: k8s render ships a component, and a script's (about 3 MB) \
             is over a ConfigMap's 1 MiB: build and push it (`host build {}`, then `host push \
             SCRIPT.wasm REGISTRY/NAME:TAG`) and render `host k8s render REGISTRY/NAME:TAG`",
            args.plugin.display(),
            args.plugin.display()
        );
    }
    // A registry reference is pulled in the pods; a file travels in the ConfigMap.
    let (plugin, mut files) = if crate::plugin::reference::names_reference(&args.plugin) {
        let text = args.plugin.to_string_lossy().into_owned();
        crate::plugin::reference::Reference::parse(&text)?;
        (text, Vec::new())
    } else {
        let bytes = std::fs::read(&args.plugin)
            .with_context(|| format!("cannot read the plugin {}", args.plugin.display()))?;
        (
            format!("{}/{PLUGIN_KEY}", manifests::FILES_DIR),
            vec![(PLUGIN_KEY.to_string(), bytes)],
        )
    };
    let mut run_flags = Vec::new();
    // The environment in the order the run applies it: each config's [env], then
    // --env-file, then -e (the later wins).
    let (mut from_configs, mut from_file, mut from_flags) = (Vec::new(), Vec::new(), Vec::new());
    let mut flags = args.run_flags.iter();
    while let Some(flag) = flags.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) if flag.starts_with("--") => (name, Some(value.to_string())),
            _ if flag.starts_with("-e") && flag.len() > 2 => ("-e", Some(flag[2..].to_string())),
            _ => (flag.as_str(), None),
        };
        if ENV_FLAGS.contains(&name) {
            let Some(pair) = inline.or_else(|| flags.next().cloned()) else {
                bail!("{name} needs KEY=VALUE");
            };
            from_flags.push(crate::config::args::key_value(&pair).map_err(anyhow::Error::msg)?);
            continue;
        }
        if !FILE_FLAGS.contains(&name) {
            run_flags.push(flag.clone());
            continue;
        }
        let path = match inline.or_else(|| flags.next().cloned()) {
            Some(path) => path,
            None => bail!("{name} needs a file"),
        };
        if name == "--env-file" {
            from_file = crate::config::env_file::read(Path::new(&path))?;
            continue;
        }
        let key = format!("file{}-{}", files.len(), file_name(Path::new(&path)));
        let mut bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {name} {path}"))?;
        if let Some((env, rest)) = split_env(&bytes, &path)? {
            from_configs.extend(env);
            bytes = rest;
        }
        files.push((key.clone(), bytes));
        run_flags.push(name.to_string());
        run_flags.push(format!("{}/{key}", manifests::FILES_DIR));
    }
    let env: BTreeMap<String, String> = from_configs
        .into_iter()
        .chain(from_file)
        .chain(from_flags)
        .collect();
    for key in env.keys() {
        if !is_secret_key(key) {
            bail!(
                "environment variable {key:?}: a Kubernetes Secret key may hold only letters, \
                 digits, '-', '_' and '.'; rename it"
            );
        }
        // Read by the coordinator from its own environment, which the Secret fills.
        run_flags.push("-e".into());
        run_flags.push(key.clone());
    }
    let size: usize = files.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > CONFIG_MAP_LIMIT * 3 / 4 {
        // Base64 in the object makes them a third larger.
        let advice = match files.first() {
            Some((key, bytes)) if key == PLUGIN_KEY => too_big_advice(bytes),
            _ => "make the run's files smaller",
        };
        bail!(
            "the plugin and the run's files come to {size} bytes: a ConfigMap holds at most \
             1 MiB once encoded; {advice}"
        );
    }
    Ok(Plan {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        workers: args.workers,
        port: args.port,
        plugin,
        files,
        run_flags,
        env,
        token: token(args.token_file.as_deref())?,
    })
}

/// `KEY`, `VALUE` pairs in order.
type EnvPairs = Vec<(String, String)>;

/// A run config's `[env]` pairs and the file without them, or `None` when it has no
/// `[env]` (then its bytes are shipped as written). The values go into the Secret, not
/// the ConfigMap, which anyone who may read the namespace's objects can read.
fn split_env(bytes: &[u8], path: &str) -> Result<Option<(EnvPairs, Vec<u8>)>> {
    let text = std::str::from_utf8(bytes).with_context(|| format!("{path} is not UTF-8"))?;
    let mut table = crate::config::parse_toml(text, path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(env) = table.remove("env") else {
        return Ok(None);
    };
    let toml::Value::Table(env) = env else {
        bail!("{path}: [env] must be a table of KEY = \"value\"");
    };
    let mut pairs = Vec::new();
    for (key, value) in env {
        let toml::Value::String(value) = value else {
            bail!("{path}: [env] {key} must be a string");
        };
        pairs.push((key, value));
    }
    let rest = toml::to_string(&table).with_context(|| format!("cannot rewrite {path}"))?;
    Ok(Some((pairs, rest.into_bytes())))
}

/// Whether `key` may name a Secret's entry (and so the coordinator's variable).
fn is_secret_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `--token-file`, else `HOST_CLUSTER_TOKEN`, else 32 random bytes in hex.
fn token(file: Option<&Path>) -> Result<String> {
    use crate::distributed::trust::{ClusterToken, TOKEN_ENV};
    let given =
        match file {
            Some(file) => Some(std::fs::read_to_string(file).with_context(|| {
                format!("cannot read the cluster token file {}", file.display())
            })?),
            None => std::env::var(TOKEN_ENV).ok(),
        };
    match given {
        Some(text) => {
            ClusterToken::new(&text)?;
            Ok(text.trim().to_string())
        }
        None => Ok(hex::encode(rand::random::<[u8; 32]>())),
    }
}

/// The manifests as YAML documents or a JSON `List`.
pub(crate) fn serialize(manifests: &Manifests, format: &str) -> Result<String> {
    let values = manifests.to_values()?;
    if format == "json" {
        let list = serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": values });
        return Ok(serde_json::to_string_pretty(&list)? + "\n");
    }
    let mut out = String::new();
    for value in values {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(&value)?);
    }
    Ok(out)
}

/// A ConfigMap key from a file name: letters, digits, '-', '_' and '.' only.
fn file_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect()
}

fn is_dns_label(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// What to do about a plugin too large for a ConfigMap. A k6 script's component carries
/// the JavaScript engine and the script's heap (~2.8 MB) and cannot be stripped below
/// the limit: advice for Rust plugins only (issue 49) left a script's user nowhere.
fn too_big_advice(plugin: &[u8]) -> &'static str {
    let k6 = plugin
        .windows(b"loadtest:k6-layer".len())
        .any(|w| w == b"loadtest:k6-layer");
    if k6 {
        "a k6 script's component (the JavaScript engine with the script) is about 3 MB and \
         cannot be made small enough: push it to a registry (`host push script.wasm \
         REGISTRY/NAME:TAG`) and render `host k8s render REGISTRY/NAME:TAG`: the pods pull \
         it"
    } else {
        "strip the plugin (`strip = \"debuginfo\"` in its Cargo.toml's release profile) or make \
         it smaller"
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_k6_scripts_component_gets_advice_that_fits_it() {
        let js = super::too_big_advice(b"\0asm...import loadtest:k6-layer/samples@0.1.0...");
        assert!(js.contains("host push script.wasm"), "{js}");
        assert!(!js.contains("strip ="), "{js}");
        let rust = super::too_big_advice(b"\0asm...loadtest:scenario/http@0.3.6...");
        assert!(rust.contains("strip"), "{rust}");
    }
}
