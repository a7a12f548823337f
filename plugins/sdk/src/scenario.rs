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

/// One scenario's iteration, as [`dispatch`] runs it.
pub type Iteration = fn() -> Result<(), String>;

/// Runs the iteration of the scenario called `scenario` from `scenarios` (its name and
/// its function, in the order the plugin lists them); `"default"`, the name a run
/// config without `exec` gives, runs the first. Any other name is an error that lists
/// the names the plugin has. Call it from [`Scenario::iteration`]:
///
/// ```no_run
/// # fn browse() -> Result<(), String> { Ok(()) }
/// # fn write() -> Result<(), String> { Ok(()) }
/// # fn iteration(scenario: String) -> Result<(), String> {
/// loadtest::dispatch(&scenario, &[("browse", browse), ("write", write)])
/// # }
/// ```
pub fn dispatch(scenario: &str, scenarios: &[(&str, Iteration)]) -> Result<(), String> {
    let found = if scenario == "default" {
        scenarios.first()
    } else {
        scenarios.iter().find(|(name, _)| *name == scenario)
    };
    match found {
        Some((_, iteration)) => iteration(),
        None => Err(unknown(scenario, scenarios.iter().map(|(name, _)| *name))),
    }
}

/// The value that `scenarios` pairs with the name `scenario` (no `"default"` alias:
/// for plugins whose every scenario must be named), or the error of [`dispatch`].
pub fn choose<T: Copy>(scenario: &str, scenarios: &[(&str, T)]) -> Result<T, String> {
    scenarios
        .iter()
        .find(|(name, _)| *name == scenario)
        .map(|(_, value)| *value)
        .ok_or_else(|| unknown(scenario, scenarios.iter().map(|(name, _)| *name)))
}

/// "unknown scenario `x`; this plugin has `a`, `b` and `c`".
fn unknown<'a>(scenario: &str, names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    let list = match names.split_last() {
        None => "no scenarios".to_owned(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    };
    format!("unknown scenario `{scenario}`; this plugin has {list}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a() -> Result<(), String> {
        Err("ran a".into())
    }

    fn b() -> Result<(), String> {
        Err("ran b".into())
    }

    #[test]
    fn a_scenario_runs_by_its_name_and_default_runs_the_first() {
        let table: &[(&str, Iteration)] = &[("a", a), ("b", b)];
        assert_eq!(dispatch("b", table), Err("ran b".into()));
        assert_eq!(dispatch("a", table), Err("ran a".into()));
        assert_eq!(dispatch("default", table), Err("ran a".into()));
    }

    #[test]
    fn an_unknown_name_lists_the_plugins_scenarios() {
        let one: &[(&str, Iteration)] = &[("burst", a)];
        assert_eq!(
            dispatch("x", one),
            Err("unknown scenario `x`; this plugin has `burst`".into())
        );
        let two: &[(&str, Iteration)] = &[("start", a), ("start_grpc", b)];
        assert_eq!(
            dispatch("x", two),
            Err("unknown scenario `x`; this plugin has `start` and `start_grpc`".into())
        );
        let three: &[(&str, Iteration)] = &[("browse", a), ("write", a), ("sockets", b)];
        assert_eq!(
            dispatch("x", three),
            Err("unknown scenario `x`; this plugin has `browse`, `write` and `sockets`".into())
        );
        assert_eq!(
            dispatch("x", &[]),
            Err("unknown scenario `x`; this plugin has no scenarios".into())
        );
    }

    #[test]
    fn choose_has_no_default() {
        let table = [("one_address", "one"), ("per_vu_address", "per_vu")];
        assert_eq!(choose("per_vu_address", &table), Ok("per_vu"));
        assert_eq!(
            choose("default", &table),
            Err(
                "unknown scenario `default`; this plugin has `one_address` and `per_vu_address`"
                    .into()
            )
        );
    }
}
