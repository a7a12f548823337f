//! Property tests of the run-config parser, builder and merge (moved from
//! tests/properties.rs): whatever the input, a value or an error that names the place,
//! never a panic. Longer runs: `PROPTEST_CASES=200000 cargo test -p host --lib
//! properties`. Saved failing cases: host/proptest-regressions/config/properties.txt.

use crate::{build_config as build, merge_config as merge, parse_config as parse_toml, Overrides};
use proptest::prelude::*;

proptest! {
    #[test]
    fn toml_parser_never_panics(text in "\\PC{0,200}") {
        let _ = parse_toml(&text, "fuzz");
    }

    #[test]
    fn config_builder_explains_every_bad_config(table in config_table()) {
        match build(table, &Overrides::default()) {
            Ok(config) => {
                prop_assert!(!config.scenarios.is_empty());
                for s in &config.scenarios {
                    let ramping = matches!(s.executor, crate::ExecutorConfig::RampingVus { .. });
                    prop_assert!(s.executor.max_vus() >= 1 || ramping);
                }
            }
            Err(errors) => {
                prop_assert!(!errors.0.is_empty());
                for e in &errors.0 {
                    prop_assert!(!e.message.is_empty());
                    let top = e.path.split('.').next().unwrap_or("");
                    prop_assert!(
                        ["scenarios", "thresholds", "env", "targets", "limits", "data"].contains(&top)
                            || !top.is_empty(),
                        "error without a place: {}", e
                    );
                }
            }
        }
    }

    #[test]
    fn merging_never_loses_run_config_scenarios(table in config_table()) {
        let base = parse_toml("[scenarios.plugin]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\n", "plugin").unwrap();
        let merged = merge(base, table.clone());
        if let Some(scenarios) = table.get("scenarios") {
            prop_assert_eq!(merged.get("scenarios"), Some(scenarios));
        }
    }
}

/// Values an operator might write, right or wrong.
fn value() -> impl Strategy<Value = toml::Value> {
    prop_oneof![
        (-5i64..100_000).prop_map(toml::Value::Integer),
        (-1.0f64..1e6).prop_map(toml::Value::Float),
        any::<bool>().prop_map(toml::Value::Boolean),
        prop_oneof![
            Just("30s".to_string()),
            Just("1m30s".to_string()),
            Just("10".to_string()),
            Just("constant-vus".to_string()),
            Just("ramping-arrival-rate".to_string()),
            Just("per-vu-iterations".to_string()),
            "[a-z0-9.-]{0,12}",
        ]
        .prop_map(toml::Value::String),
        proptest::collection::vec(
            proptest::collection::btree_map(
                prop_oneof![
                    Just("duration".to_string()),
                    Just("target".to_string()),
                    "[a-z]{1,6}"
                ],
                prop_oneof![
                    Just(toml::Value::String("2s".into())),
                    (0i64..50).prop_map(toml::Value::Integer)
                ],
                0..3
            )
            .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
            0..3
        )
        .prop_map(toml::Value::Array),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("executor".to_string()),
        Just("vus".to_string()),
        Just("duration".to_string()),
        Just("iterations".to_string()),
        Just("rate".to_string()),
        Just("time_unit".to_string()),
        Just("pre_allocated_vus".to_string()),
        Just("max_vus".to_string()),
        Just("stages".to_string()),
        Just("start_vus".to_string()),
        Just("start_rate".to_string()),
        Just("graceful_stop".to_string()),
        Just("start_time".to_string()),
        Just("exec".to_string()),
        "[a-z_]{1,10}",
    ]
}

fn config_table() -> impl Strategy<Value = toml::Table> {
    let scenario = proptest::collection::btree_map(key(), value(), 0..7)
        .prop_map(|m| toml::Value::Table(m.into_iter().collect()));
    let scenarios = proptest::collection::btree_map("[a-z]{1,5}", scenario, 0..3)
        .prop_map(|m| toml::Value::Table(m.into_iter().collect()));
    let limits = proptest::collection::btree_map(
        prop_oneof![
            Just("memory_mb".to_string()),
            Just("iteration_timeout".to_string()),
            Just("cpu_per_call".to_string()),
            "[a-z_]{1,8}"
        ],
        value(),
        0..3,
    )
    .prop_map(|m| toml::Value::Table(m.into_iter().collect()));
    (
        scenarios,
        proptest::option::of(limits),
        proptest::option::of(value()),
    )
        .prop_map(|(s, l, extra)| {
            let mut t = toml::Table::new();
            t.insert("scenarios".into(), s);
            if let Some(l) = l {
                t.insert("limits".into(), l);
            }
            if let Some(v) = extra {
                t.insert("targets".into(), v);
            }
            t
        })
}
