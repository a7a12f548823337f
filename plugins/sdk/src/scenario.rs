//! The [`Scenario`] trait a plugin implements and its self-description, [`PluginInfo`].

/// A load-test scenario plugin.
///
/// Every function runs inside one VU's instance: `static`s and `thread_local!`s are
/// per VU, so a value stored in [`init`](Scenario::init) (a sign-in token, say) is
/// that VU's own. Errors are plain `String`s; they are reported by the host with the
/// phase they came from and counted in `plugin_errors`.
///
/// Only [`describe`](Scenario::describe) and [`iteration`](Scenario::iteration) are
/// required.
pub trait Scenario {
    /// Describes the plugin: name, version, scenarios and a default run config.
    /// Called by the host before anything else; must not do I/O.
    fn describe() -> PluginInfo;

    /// Runs once before the test, in an instance of its own, with the run config as
    /// JSON. The string it returns is handed to every VU's [`init`](Scenario::init)
    /// and to [`teardown`](Scenario::teardown). Defaults to returning an empty string.
    fn setup(config: String) -> Result<String, String> {
        let _ = config;
        Ok(String::new())
    }

    /// Runs once per VU before its first iteration, with the result of
    /// [`setup`](Scenario::setup). Defaults to doing nothing.
    fn init(data: String) -> Result<(), String> {
        let _ = data;
        Ok(())
    }

    /// Runs one iteration of the scenario named `scenario` (the `exec` of the run
    /// config's scenario; `"default"` unless set). An `Err` fails the iteration.
    fn iteration(scenario: String) -> Result<(), String>;

    /// Runs once after the test, with the result of [`setup`](Scenario::setup).
    /// Defaults to doing nothing.
    fn teardown(data: String) -> Result<(), String> {
        let _ = data;
        Ok(())
    }
}

/// A scenario the plugin can run: the value of `exec` in the run config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioInfo {
    /// The name `exec` refers to; passed to [`Scenario::iteration`].
    pub name: String,
    /// One line on what the scenario does.
    pub description: String,
}

/// What [`Scenario::describe`] returns: the plugin's name, version, description,
/// scenarios and default run config. Build it with [`PluginInfo::new`] and the
/// chained setters.
///
/// ```
/// use loadtest::PluginInfo;
///
/// let info = PluginInfo::new("notes")
///     .description("Browse notes as signed-in users")
///     .scenario("browse", "list a group's notes, open one, think")
///     .default_config("[scenarios.browse]\nexecutor = \"constant-vus\"\nexec = \"browse\"\n");
/// assert_eq!(info.scenarios.len(), 1);
/// assert!(info.version.is_none()); // filled from Cargo.toml by `export!`
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginInfo {
    /// The plugin's name, shown in summaries.
    pub name: String,
    /// The plugin's version; `None` means the plugin crate's `CARGO_PKG_VERSION`,
    /// filled in by [`export!`](crate::export!).
    pub version: Option<String>,
    /// One paragraph on what the plugin tests.
    pub description: String,
    /// The scenarios the plugin offers. When left empty, [`export!`](crate::export!)
    /// reports a single scenario named `default`.
    pub scenarios: Vec<ScenarioInfo>,
    /// A run config in TOML (`[scenarios.NAME]` tables, thresholds, ...) used when the
    /// operator gives none; values from a run file and CLI flags override it.
    pub default_config: String,
    /// The custom metrics the plugin records ([`PluginInfo::metric`]), declared to the
    /// host so a threshold on a metric nothing records is refused before the run.
    pub metrics: Vec<(String, crate::metrics::Kind)>,
    /// The tags the plugin sets, with the values each takes (empty: any value)
    /// ([`PluginInfo::tag`]).
    pub tags: Vec<(String, Vec<String>)>,
}

impl PluginInfo {
    /// Starts a description of the plugin called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PluginInfo {
            name: name.into(),
            ..PluginInfo::default()
        }
    }

    /// Sets the version (by default the plugin crate's version from Cargo.toml).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Adds a scenario that the run config can name in `exec`.
    pub fn scenario(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.scenarios.push(ScenarioInfo {
            name: name.into(),
            description: description.into(),
        });
        self
    }

    /// Sets the default run config (TOML).
    pub fn default_config(mut self, toml: impl Into<String>) -> Self {
        self.default_config = toml.into();
        self
    }

    /// Declares a custom metric the plugin records (with [`crate::metrics::add`] and
    /// its kin). Once a plugin declares anything, the host refuses before the run a
    /// threshold on a custom metric it did not declare, with the nearest name
    /// suggested; built-in metrics are always known.
    ///
    /// ```
    /// use loadtest::{metrics::Kind, PluginInfo};
    ///
    /// let info = PluginInfo::new("shop")
    ///     .metric("orders", Kind::Counter)
    ///     .tag("kind", &["retail", "bulk"])
    ///     .tag("name", &["/", "/cart"]);
    /// assert_eq!(info.metrics.len(), 1);
    /// ```
    pub fn metric(mut self, name: impl Into<String>, kind: crate::metrics::Kind) -> Self {
        self.metrics.push((name.into(), kind));
        self
    }

    /// Declares a tag the plugin sets (on requests, as `name`; on checks or custom
    /// metrics) and every value it takes; `&[]` when it takes any value. The host then
    /// refuses a threshold that selects another value (`{kind:retial}`), and one on a
    /// tag that neither the host nor the plugin sets.
    pub fn tag(mut self, name: impl Into<String>, values: &[&str]) -> Self {
        self.tags.push((
            name.into(),
            values.iter().map(|v| (*v).to_owned()).collect(),
        ));
        self
    }
}
