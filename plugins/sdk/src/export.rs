//! The [`export!`](crate::export!) macro and the glue it expands to: the `wit-bindgen`
//! `Guest` implementation that delegates to a [`Scenario`], and the panic hook.
//!
//! Nothing here is meant to be called by a plugin directly.

use std::panic::PanicHookInfo;
use std::sync::Once;

use crate::bindings::exports::loadtest::scenario::plugin as wit;
use crate::bindings::loadtest::scenario::metrics as wit_metrics;
use crate::bindings::loadtest::scenario::vu as wit_vu;
use crate::scenario::{PluginInfo, Scenario};

/// Exports a [`Scenario`](crate::Scenario) implementation as the plugin's component
/// exports. Use it once per plugin crate, at the top level:
///
/// ```no_run
/// struct MyScenario;
/// impl loadtest::Scenario for MyScenario {
///     fn describe() -> loadtest::PluginInfo {
///         loadtest::PluginInfo::new("my-scenario")
///     }
///     fn iteration(_scenario: String) -> Result<(), String> {
///         Ok(())
///     }
/// }
/// loadtest::export!(MyScenario);
/// ```
///
/// Besides the exports, it fills in [`PluginInfo::version`](crate::PluginInfo) with
/// the plugin crate's `CARGO_PKG_VERSION` when `describe` leaves it unset, and on the
/// first call into the plugin installs a panic hook that hands the panic's message and
/// location (`"panicked at src/lib.rs:12:5: boom"`) to the host through
/// `vu.report-panic` before the instance aborts (a trap the host can only see as
/// `unreachable`).
#[macro_export]
macro_rules! export {
    ($scenario:ty) => {
        const _: () = {
            struct __LoadtestGuest;

            impl $crate::bindings::exports::loadtest::scenario::plugin::Guest for __LoadtestGuest {
                fn describe() -> $crate::bindings::exports::loadtest::scenario::plugin::PluginInfo {
                    $crate::export::describe::<$scenario>(::core::env!("CARGO_PKG_VERSION"))
                }
                fn setup(
                    config: ::std::string::String,
                ) -> ::core::result::Result<::std::string::String, ::std::string::String> {
                    $crate::export::enter();
                    <$scenario as $crate::Scenario>::setup(config)
                }
                fn init(
                    data: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::export::enter();
                    <$scenario as $crate::Scenario>::init(data)
                }
                fn iteration(
                    scenario: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::export::enter();
                    <$scenario as $crate::Scenario>::iteration(scenario)
                }
                fn teardown(
                    data: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::export::enter();
                    <$scenario as $crate::Scenario>::teardown(data)
                }
            }

    $crate::bindings::export!(__LoadtestGuest with_types_in $crate::bindings);
        };
    };
}

/// Runs on every entry into an export; installs the panic hook the first time.
pub fn enter() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            wit_vu::report_panic(&panic_message(info));
            // Still print to stderr as usual, which the host may capture as well.
            default_hook(info);
        }));
    });
}

/// Formats a panic as `panicked at FILE:LINE:COL: MESSAGE`, on one line.
fn panic_message(info: &PanicHookInfo<'_>) -> String {
    let message = info.payload_as_str().unwrap_or("Box<dyn Any>");
    match info.location() {
        Some(loc) => format!(
            "panicked at {}:{}:{}: {}",
            loc.file(),
            loc.line(),
            loc.column(),
            message
        ),
        None => format!("panicked: {message}"),
    }
}

/// Calls `S::describe()` and converts the result for the host, filling in the version
/// (`crate_version`, the plugin crate's) and the `default` scenario when left unset;
/// declares the metrics and tags it names to the host (`metrics.declare`).
pub fn describe<S: Scenario>(crate_version: &str) -> wit::PluginInfo {
    enter();
    let PluginInfo {
        name,
        version,
        description,
        scenarios,
        default_config,
        metrics,
        tags,
    } = S::describe();
    if !metrics.is_empty() || !tags.is_empty() {
        let metrics: Vec<wit_metrics::MetricDeclaration> = metrics
            .into_iter()
            .map(|(name, kind)| wit_metrics::MetricDeclaration { name, kind })
            .collect();
        let tags: Vec<wit_metrics::TagDeclaration> = tags
            .into_iter()
            .map(|(name, values)| wit_metrics::TagDeclaration { name, values })
            .collect();
        wit_metrics::declare(&metrics, &tags);
    }
    let mut scenarios: Vec<wit::ScenarioInfo> = scenarios
        .into_iter()
        .map(|s| wit::ScenarioInfo {
            name: s.name,
            description: s.description,
        })
        .collect();
    if scenarios.is_empty() {
        scenarios.push(wit::ScenarioInfo {
            name: "default".to_owned(),
            description: description.clone(),
        });
    }
    wit::PluginInfo {
        name,
        version: version.unwrap_or_else(|| crate_version.to_owned()),
        description,
        scenarios,
        default_config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bare;
    impl Scenario for Bare {
        fn describe() -> PluginInfo {
            PluginInfo::new("bare").description("does nothing")
        }
        fn iteration(_scenario: String) -> Result<(), String> {
            Ok(())
        }
    }

    struct Full;
    impl Scenario for Full {
        fn describe() -> PluginInfo {
            PluginInfo::new("full")
                .version("9.9.9")
                .scenario("a", "first")
                .scenario("b", "second")
                .default_config("[scenarios.a]\n")
        }
        fn iteration(_scenario: String) -> Result<(), String> {
            Ok(())
        }
    }

    #[test]
    fn describe_fills_version_and_default_scenario() {
        let info = describe::<Bare>("1.2.3");
        assert_eq!(info.name, "bare");
        assert_eq!(info.version, "1.2.3");
        assert_eq!(info.scenarios.len(), 1);
        assert_eq!(info.scenarios[0].name, "default");
        assert_eq!(info.scenarios[0].description, "does nothing");
    }

    #[test]
    fn describe_keeps_what_the_plugin_says() {
        let info = describe::<Full>("1.2.3");
        assert_eq!(info.version, "9.9.9");
        let names: Vec<_> = info.scenarios.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(info.default_config, "[scenarios.a]\n");
    }

    #[test]
    fn default_phases_succeed() {
        assert_eq!(Bare::setup("{}".into()), Ok(String::new()));
        assert_eq!(Bare::init(String::new()), Ok(()));
        assert_eq!(Bare::teardown(String::new()), Ok(()));
    }
}
