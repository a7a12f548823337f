//! Secrets stay secret: the values of `-e`, `--env-file`, `[env]` and a scenario's
//! `env` reach the plugin and nothing else. Results, logs and rendered manifests show
//! the keys, each value written `***`: a token given to a run must not end up in a
//! world-readable summary.json, a sweep level's run.toml or a Job's arguments.

/// What a secret value is written as.
pub(crate) const MASK: &str = "***";

/// The run config as results show it: every value of `[env]` and of each
/// `[scenarios.NAME] env` replaced by [`MASK`], the keys kept.
pub(crate) fn redacted(source: &toml::Table) -> toml::Table {
    let mut out = source.clone();
    if let Some(toml::Value::Table(env)) = out.get_mut("env") {
        mask_values(env);
    }
    if let Some(toml::Value::Table(scenarios)) = out.get_mut("scenarios") {
        for (_, scenario) in scenarios.iter_mut() {
            if let Some(toml::Value::Table(env)) =
                scenario.as_table_mut().and_then(|s| s.get_mut("env"))
            {
                mask_values(env);
            }
        }
    }
    out
}

fn mask_values(env: &mut toml::Table) {
    for (_, value) in env.iter_mut() {
        *value = toml::Value::String(MASK.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_are_masked_and_keys_kept() {
        let source: toml::Table = toml::from_str(
            "[env]\nAPI_TOKEN = \"s3cret\"\nN = \"1\"\n\
             [scenarios.a]\nexecutor = \"constant-vus\"\nenv = { PASS = \"hunter2\" }\n\
             [scenarios.b]\nexecutor = \"constant-vus\"\n",
        )
        .unwrap();
        let text = toml::to_string(&redacted(&source)).unwrap();
        assert!(
            !text.contains("s3cret") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(text.contains("API_TOKEN = \"***\""), "{text}");
        assert!(text.contains("PASS = \"***\""), "{text}");
        assert!(text.contains("executor = \"constant-vus\""), "{text}");
    }
}
