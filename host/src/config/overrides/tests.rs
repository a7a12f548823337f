//! The overrides against every executor, what they write back read again as a worker
//! reads it, and the words of their mistakes.

use super::super::{build, parse_toml, RunConfig};
use super::*;

/// One scenario of each executor.
const EVERY_EXECUTOR: &str = r#"
    [scenarios.cv]
    executor = "constant-vus"
    vus = 5
    duration = "10s"
    [scenarios.pvi]
    executor = "per-vu-iterations"
    vus = 2
    iterations = 3
    [scenarios.si]
    executor = "shared-iterations"
    vus = 2
    iterations = 30
    [scenarios.car]
    executor = "constant-arrival-rate"
    rate = 10
    duration = "10s"
    pre_allocated_vus = 2
    [scenarios.rv]
    executor = "ramping-vus"
    stages = [{ duration = "1s", target = 2 }]
    [scenarios.rar]
    executor = "ramping-arrival-rate"
    pre_allocated_vus = 1
    stages = [{ duration = "1s", target = 2 }]
"#;

fn config(text: &str, o: &Overrides) -> Result<RunConfig, ConfigErrors> {
    build(parse_toml(text, "run.toml").unwrap(), o)
}

fn executor(c: &RunConfig, name: &str) -> ExecutorConfig {
    c.scenarios
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
        .executor
        .clone()
}

/// `path: message` of each mistake.
fn mistakes(text: &str, o: &Overrides) -> Vec<String> {
    match config(text, o) {
        Ok(_) => panic!("accepted with {o:?}"),
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn each_flag_changes_the_executors_k6_changes() {
    let o = Overrides {
        vus: Some(4),
        duration: Some(Duration::from_secs(2)),
        rate: Some(7.5),
        ..Default::default()
    };
    let c = config(EVERY_EXECUTOR, &o).unwrap();
    let secs = Duration::from_secs;
    assert_eq!(
        executor(&c, "cv"),
        ExecutorConfig::ConstantVus {
            vus: 4,
            duration: secs(2)
        }
    );
    assert!(matches!(
        executor(&c, "pvi"),
        ExecutorConfig::PerVuIterations {
            vus: 4,
            iterations: 3,
            ..
        }
    ));
    assert!(matches!(
        executor(&c, "si"),
        ExecutorConfig::SharedIterations {
            vus: 4,
            iterations: 30,
            ..
        }
    ));
    assert!(matches!(
        executor(&c, "car"),
        ExecutorConfig::ConstantArrivalRate { rate, duration, pre_allocated_vus: 2, .. }
            if rate == 7.5 && duration == secs(2)
    ));
    let unchanged = config(EVERY_EXECUTOR, &Overrides::default()).unwrap();
    for name in ["rv", "rar"] {
        assert_eq!(executor(&c, name), executor(&unchanged, name), "{name}");
    }

    let o = Overrides {
        iterations: Some(8),
        ..Default::default()
    };
    let c = config(EVERY_EXECUTOR, &o).unwrap();
    assert_eq!(
        executor(&c, "cv"),
        ExecutorConfig::SharedIterations {
            vus: 5,
            iterations: 8,
            max_duration: DEFAULT_MAX_DURATION
        },
        "constant-vus becomes shared-iterations, as in k6"
    );
    assert!(matches!(
        executor(&c, "pvi"),
        ExecutorConfig::PerVuIterations { iterations: 8, .. }
    ));
    assert_eq!(executor(&c, "car"), executor(&unchanged, "car"));
}

#[test]
fn what_is_written_back_reads_as_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        Overrides {
            vus: Some(3),
            duration: Some(Duration::from_millis(1250)),
            rate: Some(2.5),
            env: vec![("A".into(), "1".into())],
            allow: vec!["http://example.com".into()],
            sample_containers: vec!["db".into()],
            sample_pids: vec!["web=7".into()],
            stats_interval: Some(Duration::from_secs(2)),
            insecure_skip_tls_verify: true,
            ..Default::default()
        },
        Overrides {
            iterations: Some(40),
            vus: Some(2),
            allow: vec!["http://only.example".into()],
            allow_only: true,
            ..Default::default()
        },
        Overrides {
            stages: vec![
                Stage {
                    duration: Duration::from_millis(1500),
                    target: 3,
                },
                Stage {
                    duration: Duration::from_secs(1),
                    target: 0,
                },
            ],
            vus: Some(2),
            ..Default::default()
        },
    ];
    let text = format!("{EVERY_EXECUTOR}\n[targets]\nallow = [\"http://a.example\"]\n");
    for o in sets {
        let run = config(&text, &o).unwrap();
        // What a worker does with what it is sent: reads it without the flags.
        let again = build(run.source.clone(), &Overrides::default()).unwrap();
        assert_eq!(again, run, "{o:?}");
        // And the table the results keep says so in the config's own words.
        std::fs::write(
            dir.path().join("run.toml"),
            toml::to_string(&run.source).unwrap(),
        )
        .unwrap();
        let text = std::fs::read_to_string(dir.path().join("run.toml")).unwrap();
        let reread = build(
            parse_toml(&text, "run.toml").unwrap(),
            &Overrides::default(),
        );
        assert_eq!(reread.unwrap(), run, "{o:?}");
    }
}

#[test]
fn a_flag_without_a_scenario_to_change_writes_nothing_there() {
    let text =
        "[scenarios.r]\nexecutor = \"ramping-vus\"\nstages = [{ duration = \"1s\", target = 2 }]\n";
    let o = Overrides {
        vus: Some(3),
        duration: Some(Duration::from_secs(4)),
        rate: Some(2.0),
        iterations: Some(3),
        ..Default::default()
    };
    let run = config(text, &o).unwrap();
    assert_eq!(run.source, parse_toml(text, "run.toml").unwrap());
}

#[test]
fn flag_values_are_checked_in_the_configs_words() {
    let cv = "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 5\nduration = \"1s\"\n";
    let car = "[scenarios.a]\nexecutor = \"constant-arrival-rate\"\nrate = 1\nduration = \"1s\"\npre_allocated_vus = 1\n";
    let si = "[scenarios.a]\nexecutor = \"shared-iterations\"\nvus = 2\niterations = 20\n";
    let cases: [(&str, Overrides, &[&str]); 7] = [
        (
            cv,
            Overrides {
                vus: Some(0),
                duration: Some(Duration::ZERO),
                ..Default::default()
            },
            &[
                "scenarios.a.vus: must be at least 1",
                "scenarios.a.duration: must be longer than 0s",
            ],
        ),
        (
            car,
            Overrides {
                rate: Some(0.0),
                ..Default::default()
            },
            &["scenarios.a.rate: must be a number greater than 0"],
        ),
        (
            car,
            Overrides {
                rate: Some(f64::NAN),
                ..Default::default()
            },
            &["scenarios.a.rate: must be a non-negative number, got NaN"],
        ),
        (
            si,
            Overrides {
                vus: Some(50),
                ..Default::default()
            },
            &["scenarios.a.iterations: 20 iterations cannot keep 50 VUs busy; set iterations >= vus"],
        ),
        (
            cv,
            Overrides {
                iterations: Some(2),
                ..Default::default()
            },
            &["scenarios.a.iterations: 2 iterations cannot keep 5 VUs busy; set iterations >= vus"],
        ),
        (
            si,
            Overrides {
                vus: Some(0),
                iterations: Some(0),
                ..Default::default()
            },
            &[
                "scenarios.a.vus: must be at least 1",
                "scenarios.a.iterations: must be at least 1",
            ],
        ),
        (
            car,
            Overrides {
                rate: Some(2e9),
                ..Default::default()
            },
            &["scenarios.a.rate: a peak of 2000000000 iterations/s is beyond the 1000000/s one host process can start; lower the rate, or split the load over several host processes (--execution-segment)"],
        ),
    ];
    for (text, o, expected) in cases {
        assert_eq!(mistakes(text, &o), expected, "{o:?}");
    }
    let huge = Overrides {
        vus: Some(u64::MAX),
        ..Default::default()
    };
    assert_eq!(
        mistakes(cv, &huge),
        [format!(
            "scenarios.a.vus: must be at most {}, got {}",
            i64::MAX,
            u64::MAX
        )]
    );
}

#[test]
fn the_config_is_checked_as_written_even_where_a_flag_replaces_a_value() {
    // The decision of this module: a flag no longer hides the config's mistake.
    let text = "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 0\nduration = \"1s\"\n";
    let o = Overrides {
        vus: Some(2),
        ..Default::default()
    };
    assert_eq!(mistakes(text, &o), ["scenarios.a.vus: must be at least 1"]);
    // Except with --stage, which replaces the scenarios without reading them.
    let o = Overrides {
        stages: vec![Stage {
            duration: Duration::from_secs(1),
            target: 1,
        }],
        ..Default::default()
    };
    let run = config(text, &o).unwrap();
    assert_eq!(run.scenarios.len(), 1);
    assert_eq!(run.scenarios[0].name, STAGE_SCENARIO);
}
