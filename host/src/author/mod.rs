//! Plugin authoring: `host new` starts a plugin project in a folder of its own (the SDK
//! vendored into it), `host build` turns such a folder into a component and says where
//! it is — Rust with cargo, Python with componentize-py.

pub(crate) mod build;
pub(crate) mod drift;
pub(crate) mod har;
pub(crate) mod js;
pub(crate) mod new;
pub(crate) mod project;
pub(crate) mod python;
pub(crate) mod sdk;
pub(crate) mod templates;

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// The languages `host new` can start a plugin in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Lang {
    /// Rust, with the loadtest SDK vendored into the project.
    Rust,
    /// Python, built with componentize-py, with the Python SDK vendored.
    Python,
    /// JavaScript: a k6 script, built by the host itself (`host build script.js`).
    Js,
}

/// `host new NAME [--lang rust|python|js] [--from-har FILE.har [--keep-origin ORIGIN]]`.
#[derive(Args, Debug)]
pub(crate) struct NewArgs {
    /// The plugin's folder to create (its last part is the plugin's name, e.g.
    /// `checkout` or `../plugins/checkout`); it must not exist yet, or be empty.
    pub path: PathBuf,
    /// The language of the plugin.
    #[arg(long, value_enum, default_value = "rust")]
    pub lang: Lang,
    /// Write the scenario from a browser's recording (a HAR file): one step per page,
    /// the recorded pauses, static files batched, values handed out by a response and
    /// sent back later extracted at run time, a sign-up's names made unique (--lang js,
    /// rust or python).
    #[arg(long, value_name = "FILE.har")]
    pub from_har: Option<PathBuf>,
    /// With --from-har: also keep the requests to this origin (e.g.
    /// https://api.example.com); requests to other origins than the application's are
    /// left out and listed. Repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "from_har")]
    pub keep_origin: Vec<String>,
}

/// `host vendor SCRIPT [--update]`.
#[derive(Args, Debug)]
pub(crate) struct VendorArgs {
    /// The k6 script whose remote modules (`import ... from 'https://...'`) are written
    /// into `vendor/` beside it, for builds without the network.
    pub script: PathBuf,
    /// Fetch each module again and pin what the server has now (as `host build --update`).
    #[arg(long)]
    pub update: bool,
}

/// `host build [DIR]`.
#[derive(Args, Debug)]
pub(crate) struct BuildArgs {
    /// The plugin project (a folder with a Cargo.toml, or a Python app.py, as `host new`
    /// makes), or a k6 script (.js), built into `<script>.wasm` beside it.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// A k6 script's remote modules (`import ... from 'https://...'`): fetch each again
    /// and pin what the server has now in the lock file beside the script
    /// (`SCRIPT.lock`), where a build refuses a module that changed since its pin.
    #[arg(long)]
    pub update: bool,
}
