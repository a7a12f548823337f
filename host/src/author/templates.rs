//! The files of a new Rust plugin project; `{{name}}` stands for the plugin's name.

/// `Cargo.toml`: a cdylib depending on the vendored SDK, a workspace of its own.
pub(crate) const CARGO_TOML: &str = r#"[package]
name = "{{name}}"
version = "0.1.0"
edition = "2021"
publish = false
# Where the source lives: embedded in the component, shown by `host inspect`.
# repository = "https://git.example.com/your-team/{{name}}"

[lib]
# A component is a cdylib built for wasm32-wasip2 (see .cargo/config.toml).
crate-type = ["cdylib"]

[dependencies]
# The loadtest SDK, vendored: this folder builds wherever it is moved or copied.
# Features: "html" (CSS selectors on pages), "regex" (regular-expression captures).
loadtest-sdk = { path = "sdk" }

# A workspace of its own, even when this folder sits inside another Cargo workspace.
[workspace]

[profile.release]
# Keeps function names for the host's backtraces, drops DWARF (about 4 times smaller).
strip = "debuginfo"
opt-level = "s"
lto = true
codegen-units = 1
"#;

/// `.cargo/config.toml`: plain `cargo build` targets WASI 0.2.
pub(crate) const CARGO_CONFIG: &str = r#"# Plugins are WASI 0.2 components: rustup's wasm-component-ld links them directly.
# Install the target once with: rustup target add wasm32-wasip2
[build]
target = "wasm32-wasip2"

# The shadow stack 1 KiB short of the default 1 MiB: its top then shares a memory page
# with the data after it, one 4 KiB page less per virtual user. RUSTFLAGS replaces this.
[target.wasm32-wasip2]
rustflags = ["-C", "link-arg=-zstack-size=1047552"]
"#;

/// `run.toml`: the default config, compiled into the plugin (`describe()`) too.
pub(crate) const RUN_TOML: &str = r#"# The run config `host run` uses when given no --config: describe() returns this file.
# Flags override it: --vus, --duration, --iterations, -e BASE_URL=...
[scenarios.default]
executor = "constant-vus"
vus = 2
duration = "10s"

[thresholds]
http_req_failed = ["rate<0.01"]
"#;

/// `src/lib.rs`: a working scenario, one `GET {BASE_URL}/` per iteration.
pub(crate) const LIB_RS: &str = r#"//! `{{name}}`: a load-test scenario plugin. One `GET {BASE_URL}/` per iteration.
//!
//! `BASE_URL` comes from the run's environment (`host run ... -e BASE_URL=...`) and
//! defaults to `http://127.0.0.1:8080`, where `host target` serves the demo application.

use loadtest::{check, http, PluginInfo, Scenario};
use std::sync::OnceLock;

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// The scenario.
struct Plugin;

impl Scenario for Plugin {
    fn describe() -> PluginInfo {
        PluginInfo::new("{{name}}")
            .version(env!("CARGO_PKG_VERSION"))
            .description("GET {BASE_URL}/ once per iteration and check for a 200")
            .scenario("default", "GET / and check the status")
            .default_config(include_str!("../run.toml"))
    }

    fn iteration(_scenario: String) -> Result<(), String> {
        // The URL is the same for every iteration: ask the host for BASE_URL once.
        static URL: OnceLock<String> = OnceLock::new();
        let url = URL.get_or_init(|| {
            let base = loadtest::vu::env_or("BASE_URL", DEFAULT_BASE_URL);
            format!("{}/", base.trim_end_matches('/'))
        });
        let res = http::get(url.as_str()).name("/").send()?;
        check("status is 200", res.status() == 200);
        Ok(())
    }
}

loadtest::export!(Plugin);

// The README and the source URL travel inside the .wasm (`host inspect` shows them).
loadtest::embed_meta!(
    readme: include_str!("../README.md"),
    source: env!("CARGO_PKG_REPOSITORY"),
);
"#;

/// `README.md`: how to build, run, change and share the plugin.
pub(crate) const README: &str = r#"# {{name}}

A load-test scenario for the `host` load generator: a WASI 0.2 component, made with
`host new {{name}}`.

## Build

```sh
rustup target add wasm32-wasip2     # once
host build                          # or: cargo build --release
# -> target/wasm32-wasip2/release/{{crate}}.wasm
```

## Run

```sh
host target &                       # the demo application on 127.0.0.1:8080, or your own
host run target/wasm32-wasip2/release/{{crate}}.wasm -e BASE_URL=http://127.0.0.1:8080
host inspect target/wasm32-wasip2/release/{{crate}}.wasm
```

`run.toml` is the default config (compiled into the plugin, returned by `describe()`);
`host run ... --config other.toml` overlays another one, and `--vus`, `--duration`,
`--iterations` override it.

## Change it

The scenario is `src/lib.rs`. The SDK (`sdk/`, crate `loadtest-sdk`, used as `loadtest`)
is vendored: this folder builds wherever it is copied. Its API: `cargo doc -p
loadtest-sdk --no-deps --open`. The contract it implements is `sdk/wit/scenario.wit`;
a host runs plugins built against its own contract version only (`host inspect` shows
both).

## Share it

Give the `.wasm` file and its sha256 (`host inspect` prints it). The receiving team pins
it in their run config, and the host refuses any other file:

```toml
plugin = { path = "{{crate}}.wasm", sha256 = "..." }
```
"#;

/// `.gitignore`.
pub(crate) const GITIGNORE: &str = "/target\n/results\n";

/// A template with the plugin's name (`{{name}}`) and the file stem of its component
/// (`{{crate}}`: cargo writes the crate name with `-` as `_`) filled in.
pub(crate) fn render(template: &str, name: &str) -> String {
    template
        .replace("{{name}}", name)
        .replace("{{crate}}", &name.replace('-', "_"))
}

/// `README.md` of a Python plugin.
pub(crate) const PY_README: &str = r#"# {{name}}

A load-test scenario for the `host` load generator, in Python: a WASI 0.2 component
built with componentize-py, made with `host new {{name}} --lang python`.

## Build

```sh
pip install componentize-py==0.25.1     # once (or in a venv)
host build                              # prints the component's path: target/{{crate}}.wasm
```

`host build` runs `componentize-py -d wit -w scenario componentize -p . app -o
target/{{crate}}.wasm`; run that yourself if you prefer. A build takes about half a
minute and the component weighs about 18 MB (it carries CPython); the host compiles it
once and keeps the result in its cache.

## Run

```sh
host target &                           # the demo application on 127.0.0.1:8080, or your own
host run target/{{crate}}.wasm -e BASE_URL=http://127.0.0.1:8080
host inspect target/{{crate}}.wasm
```

The default config is `DEFAULT_CONFIG` in `app.py` (returned by `describe()`); `host run
... --config run.toml` overlays another one, and `--vus`, `--duration`, `--iterations`
override it.

## Change it

The scenario is `app.py`: a `loadtest.Scenario` subclass exported as `Plugin`. The SDK
(`loadtest/`: `http`, `websocket`, `check`, `counter`/`gauge`/`rate`/`trend`, `sleep`,
`env`, `info`, `log`, `data_len`/`data_get`) and the contract (`wit/scenario.wit`) are
vendored: this folder builds wherever it is copied. An exception raised in a scenario
method fails that iteration, with its message.

## Share it

Give the `.wasm` file and its sha256 (`host inspect` prints it); the receiving team pins it:

```toml
plugin = { path = "{{crate}}.wasm", sha256 = "..." }
```
"#;

/// `.gitignore` of a Python plugin.
pub(crate) const PY_GITIGNORE: &str = "/target\n/results\n__pycache__/\n";

/// `script.js` of `host new --lang js`: a k6 script, run as it is by `host run`.
pub(crate) const JS_SCRIPT: &str = r#"// {{name}}: a k6 script that `host run script.js` runs as a sandboxed component.
// BASE_URL comes from the run's environment (-e BASE_URL=...); `host target` serves
// the demo application at http://127.0.0.1:8080.
import http from 'k6/http';
import { check, sleep } from 'k6';

const BASE = __ENV.BASE_URL || 'http://127.0.0.1:8080';

export const options = {
  vus: 2,
  duration: '10s',
  thresholds: { http_req_failed: ['rate<0.01'], checks: ['rate>0.99'] },
};

export default function () {
  const res = http.get(`${BASE}/`, { tags: { name: 'home' } });
  check(res, { 'status is 200': (r) => r.status === 200 });
  sleep(0.1);
}
"#;

/// `README.md` of `host new --lang js`.
pub(crate) const JS_README: &str = r#"# {{name}}

A k6 script run by the load-test host as a sandboxed WebAssembly component.

    host run script.js -e BASE_URL=http://127.0.0.1:8080    # builds (cached), then runs
    host build script.js                                     # writes script.wasm

`export const options` is the run's default config; flags (--vus, --duration, ...) and
run.toml override it. What of k6's API is supported: docs/k6-compatibility.md in the
host's repository.
"#;
