//! Property tests of the parsers an operator feeds: durations and run configs. Whatever
//! the input, they answer with a value or an error that names the place, never a panic.
//! Longer runs: `PROPTEST_CASES=200000 cargo test -p host --test properties`.

use host::{
    build_config as build, format_duration, merge_config as merge, parse_config as parse_toml,
    parse_duration, Overrides,
};
use proptest::prelude::*;
use std::time::Duration;

proptest! {
    #[test]
    fn duration_parser_never_panics(text in "\\PC{0,24}") {
        if let Ok(d) = parse_duration(&text) {
            prop_assert!(d.as_secs_f64() <= 1e9);
        }
    }

    #[test]
    fn durations_in_k6_notation_parse(parts in proptest::collection::vec((0u32..1000, prop_oneof!["ms", "s", "m", "h", "us"]), 1..4)) {
        let text: String = parts.iter().map(|(n, u)| format!("{n}{u}")).collect();
        let expected: f64 = parts.iter().map(|(n, u)| *n as f64 * match u.as_str() {
            "us" => 1e-6, "ms" => 1e-3, "s" => 1.0, "m" => 60.0, _ => 3600.0,
        }).sum();
        let d = parse_duration(&text).unwrap();
        prop_assert!((d.as_secs_f64() - expected).abs() < 1e-6, "{} -> {:?}", text, d);
    }

    #[test]
    fn formatted_durations_parse_back(ms in 0u64..1000, secs in 1u64..400_000) {
        let sub_second = Duration::from_millis(ms);
        prop_assert_eq!(parse_duration(&format_duration(sub_second)).unwrap(), sub_second);
        let whole = Duration::from_secs(secs);
        prop_assert_eq!(parse_duration(&format_duration(whole)).unwrap(), whole);
    }

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
                    let ramping = matches!(s.executor, host::ExecutorConfig::RampingVus { .. });
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

mod thresholds {
    use host::parse_expression;
    use host::parse_metric_key;
    use host::parse_thresholds;
    use host::Aggregation;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn expression_parser_never_panics_and_points_inside_the_text(text in "\\PC{0,30}") {
            if let Err(e) = parse_expression(&text) {
                // Rendering the caret line must not panic either.
                let shown = e.to_string();
                prop_assert!(shown.contains('^'), "{}", shown);
            }
        }

        #[test]
        fn metric_key_parser_never_panics(text in "\\PC{0,40}") {
            if let Err(e) = parse_metric_key(&text) {
                let _ = e.to_string();
            }
        }

        #[test]
        fn thresholds_table_never_panics(key in "\\PC{0,30}", expr in "\\PC{0,20}") {
            let mut table = toml::Table::new();
            table.insert(key, toml::Value::Array(vec![toml::Value::String(expr)]));
            let _ = parse_thresholds(&table);
        }

        #[test]
        fn written_expressions_parse_to_what_was_written(
            agg in prop_oneof![
                Just("avg"), Just("min"), Just("max"), Just("med"), Just("count"), Just("rate"), Just("value")
            ],
            p in 0.0f64..100.0,
            use_percentile in any::<bool>(),
            op in prop_oneof![Just("<"), Just("<="), Just(">"), Just(">="), Just("=="), Just("!=")],
            bound in 0u32..1_000_000,
            spaces in any::<bool>(),
        ) {
            let p = (p * 100.0).round() / 100.0;
            let aggregation = if use_percentile { format!("p({p})") } else { agg.to_string() };
            let sep = if spaces { " " } else { "" };
            let text = format!("{aggregation}{sep}{op}{sep}{bound}");
            let e = parse_expression(&text).unwrap();
            prop_assert_eq!(e.operator.as_str(), op);
            prop_assert_eq!(e.bound, bound as f64);
            if use_percentile {
                prop_assert_eq!(e.aggregation, Aggregation::Percentile(p));
            }
        }
    }
}
