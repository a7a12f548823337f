//! Reading runs back: lists with filters, one run's figures and thresholds, a run named
//! on the command line, and baselines per plugin scenario.

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// One run as lists show it.
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    /// Its id in the store.
    pub id: i64,
    /// The results folder's name.
    pub name: String,
    /// The results folder.
    pub folder: String,
    /// The plugin's name.
    pub plugin: String,
    /// The plugin's version.
    pub plugin_version: String,
    /// The plugin file's sha256.
    pub plugin_sha256: String,
    /// Its scenarios' names, comma-separated.
    pub scenarios: String,
    /// UTC start, RFC 3339.
    pub started_at: String,
    /// Its length in seconds.
    pub duration_s: f64,
    /// `completed`, `aborted`...
    pub status: String,
    /// The run's exit code (unknown for imported folders).
    pub exit_code: Option<i32>,
}

/// Which runs a list shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Runs of this plugin.
    pub plugin: Option<String>,
    /// Runs with a scenario of this name.
    pub scenario: Option<String>,
    /// Runs with a scenario tagged KEY=VALUE.
    pub tag: Option<(String, String)>,
    /// Runs started at or after this (an RFC 3339 prefix: `2026-12-04`).
    pub since: Option<String>,
    /// Runs started before this (same form).
    pub until: Option<String>,
    /// The last N of them only.
    pub last: Option<usize>,
}

const COLUMNS: &str = "r.id, r.name, r.folder, r.plugin, r.plugin_version, r.plugin_sha256,
    (SELECT group_concat(name, ',') FROM (SELECT name FROM scenarios s WHERE s.run_id = r.id ORDER BY name)),
    r.started_at, r.duration_s, r.status, r.exit_code";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        name: r.get(1)?,
        folder: r.get(2)?,
        plugin: r.get(3)?,
        plugin_version: r.get(4)?,
        plugin_sha256: r.get(5)?,
        scenarios: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
        started_at: r.get(7)?,
        duration_s: r.get(8)?,
        status: r.get(9)?,
        exit_code: r.get(10)?,
    })
}

/// The runs `filter` selects, oldest first.
pub(crate) fn list(conn: &Connection, filter: &Filter) -> Result<Vec<RunRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs r
         WHERE (?1 IS NULL OR r.plugin = ?1)
           AND (?2 IS NULL OR EXISTS (SELECT 1 FROM scenarios s WHERE s.run_id = r.id AND s.name = ?2))
           AND (?3 IS NULL OR EXISTS (SELECT 1 FROM tags t WHERE t.run_id = r.id AND t.key = ?3 AND t.value = ?4))
           AND (?5 IS NULL OR r.started_at >= ?5)
           AND (?6 IS NULL OR r.started_at < ?6)
         ORDER BY r.started_at, r.id"
    );
    let (tag_key, tag_value) = filter.tag.clone().unzip();
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(
            params![
                filter.plugin,
                filter.scenario,
                tag_key,
                tag_value,
                filter.since,
                filter.until
            ],
            row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(match filter.last {
        Some(n) if rows.len() > n => rows[rows.len() - n..].to_vec(),
        _ => rows,
    })
}

/// One run by id.
pub(crate) fn get(conn: &Connection, id: i64) -> Result<RunRow> {
    let sql = format!("SELECT {COLUMNS} FROM runs r WHERE r.id = ?1");
    conn.query_row(&sql, [id], row)
        .optional()?
        .with_context(|| format!("no run {id} in the store (`host runs list` shows them)"))
}

/// The run a command line names: its id, `last`, or its results folder (path or name).
pub(crate) fn resolve(conn: &Connection, spec: &str) -> Result<i64> {
    let spec = spec.trim();
    if spec == "last" {
        return conn
            .query_row("SELECT max(id) FROM runs", [], |r| {
                r.get::<_, Option<i64>>(0)
            })?
            .context("the store holds no run yet");
    }
    if let Ok(id) = spec.parse::<i64>() {
        return get(conn, id).map(|r| r.id);
    }
    let folder = std::fs::canonicalize(Path::new(spec))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = Path::new(spec)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let found: Vec<i64> = conn
        .prepare(
            "SELECT id FROM runs WHERE folder = ?1 OR name = ?2 ORDER BY folder = ?1 DESC, id",
        )?
        .query_map(params![folder, name], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    match found.as_slice() {
        [] => bail!(
            "no run `{spec}` in the store: name a run by its id (`host runs list`), `last`, or \
             its results folder (`host runs import DIR` indexes a folder)"
        ),
        [id, ..] => Ok(*id),
    }
}

/// Sets the exit code a run ended with (a regression found after it was recorded).
pub(crate) fn set_exit_code(conn: &Connection, id: i64, code: i32) -> Result<()> {
    conn.execute(
        "UPDATE runs SET exit_code = ?1 WHERE id = ?2",
        params![code, id],
    )?;
    Ok(())
}

/// One figure of a run (`http_req_duration`, `p95`), if it has it.
pub(crate) fn figure(conn: &Connection, id: i64, metric: &str, stat: &str) -> Result<Option<f64>> {
    Ok(conn
        .query_row(
            "SELECT value FROM figures WHERE run_id = ?1 AND metric = ?2 AND stat = ?3",
            params![id, metric, stat],
            |r| r.get(0),
        )
        .optional()?)
}

/// Every figure of a run: (metric, kind, stat, value), by metric.
pub(crate) fn figures(conn: &Connection, id: i64) -> Result<Vec<(String, String, String, f64)>> {
    let mut stmt = conn.prepare(
        "SELECT metric, kind, stat, value FROM figures WHERE run_id = ?1 ORDER BY metric, rowid",
    )?;
    let rows = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// A threshold of a run: (metric, threshold, held, observed).
pub(crate) type ThresholdRow = (String, String, bool, Option<f64>);

/// A run's thresholds, in config order.
pub(crate) fn thresholds(conn: &Connection, id: i64) -> Result<Vec<ThresholdRow>> {
    let mut stmt = conn.prepare(
        "SELECT metric, threshold, ok, observed FROM thresholds WHERE run_id = ?1 ORDER BY rowid",
    )?;
    let rows = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// What `host runs show` tells of a run beyond its row: where and how it ran.
#[derive(Debug, Clone)]
pub(crate) struct Details {
    /// The sha256 of the run's (redacted) config.
    pub config_hash: String,
    /// The version of the host that ran it.
    pub host_version: String,
    /// The machine: `hostname (os arch, N CPUs)`.
    pub machine: String,
    /// Each scenario: (name, executor, the plugin scenario it runs).
    pub scenarios: Vec<(String, String, String)>,
}

/// Run `id`'s config hash, host version, machine and scenarios with their executors.
pub(crate) fn details(conn: &Connection, id: i64) -> Result<Details> {
    let (config_hash, host_version, hostname, machine_json): (String, String, String, String) =
        conn.query_row(
            "SELECT config_hash, host_version, machine, machine_json FROM runs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
    let m: serde_json::Value = serde_json::from_str(&machine_json).unwrap_or_default();
    let field = |k: &str| {
        m.get(k)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    };
    let machine = match (field("os"), field("arch"), field("cpus")) {
        (Some(os), Some(arch), Some(cpus)) => format!("{hostname} ({os} {arch}, {cpus} CPUs)"),
        _ => hostname,
    };
    let mut stmt =
        conn.prepare("SELECT name, executor, exec FROM scenarios WHERE run_id = ?1 ORDER BY name")?;
    let scenarios = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Details {
        config_hash,
        host_version,
        machine,
        scenarios,
    })
}

/// A run's tags: (key, value).
pub(crate) fn tags(conn: &Connection, id: i64) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare("SELECT key, value FROM tags WHERE run_id = ?1 ORDER BY key")?;
    let rows = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// A run's summary.json, read back into its type.
pub(crate) fn summary(conn: &Connection, id: i64) -> Result<crate::summary::Summary> {
    let text: String =
        conn.query_row("SELECT summary FROM runs WHERE id = ?1", [id], |r| r.get(0))?;
    serde_json::from_str(&text)
        .with_context(|| format!("run {id}'s summary in the store is not one this host can read"))
}

/// Makes run `id` the baseline of its plugin's `scenario`, or of each of its scenarios;
/// returns the scenarios it is now the baseline of.
pub(crate) fn set_baseline(
    conn: &Connection,
    id: i64,
    scenario: Option<&str>,
) -> Result<Vec<String>> {
    let run = get(conn, id)?;
    let scenarios: Vec<String> = run
        .scenarios
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let chosen: Vec<String> = match scenario {
        Some(s) if scenarios.iter().any(|x| x == s) => vec![s.to_string()],
        Some(s) => bail!(
            "run {id} has no scenario `{s}`; its scenarios: {}",
            run.scenarios
        ),
        None => scenarios,
    };
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    for s in &chosen {
        conn.execute(
            "INSERT OR REPLACE INTO baselines (plugin, scenario, run_id, set_at) VALUES (?1, ?2, ?3, ?4)",
            params![run.plugin, s, id, now],
        )?;
    }
    Ok(chosen)
}

/// The baseline of the first of `run`'s scenarios that has one: (baseline id, scenario).
pub(crate) fn baseline_for(conn: &Connection, run: &RunRow) -> Result<Option<(i64, String)>> {
    for scenario in run.scenarios.split(',').filter(|s| !s.is_empty()) {
        let found: Option<i64> = conn
            .query_row(
                "SELECT run_id FROM baselines WHERE plugin = ?1 AND scenario = ?2",
                params![run.plugin, scenario],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = found.filter(|b| *b != run.id) {
            return Ok(Some((id, scenario.to_string())));
        }
    }
    Ok(None)
}

/// Every baseline: (plugin, scenario, run id).
pub(crate) fn baselines(conn: &Connection) -> Result<Vec<(String, String, i64)>> {
    let mut stmt =
        conn.prepare("SELECT plugin, scenario, run_id FROM baselines ORDER BY plugin, scenario")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The latest run before `run` of the same plugin and scenarios.
pub(crate) fn previous(conn: &Connection, run: &RunRow) -> Result<Option<i64>> {
    let earlier = list(
        conn,
        &Filter {
            plugin: Some(run.plugin.clone()),
            ..Filter::default()
        },
    )?;
    Ok(earlier
        .iter()
        .rev()
        .find(|r| r.id != run.id && r.scenarios == run.scenarios && r.started_at <= run.started_at)
        .map(|r| r.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store holding runs of `plugin` with these scenarios, started in this order.
    fn store_with(runs: &[(&str, &[&str])]) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = super::super::schema::open(&dir.path().join("runs.db")).unwrap();
        for (i, (plugin, scenarios)) in runs.iter().enumerate() {
            conn.execute(
                "INSERT INTO runs (folder, name, plugin, plugin_version, plugin_sha256,
                    config_hash, host_version, machine, machine_json, started_at, duration_s,
                    status, exit_code, seconds, summary, recorded_at)
                 VALUES (?1, ?4, ?2, '1', 'x', 'h', '0', 'm', '{}', ?3, 5, 'completed', 0, 5,
                    '{}', ?3)",
                params![
                    format!("/r/{i}"),
                    plugin,
                    format!("2026-12-05T10:00:0{i}Z"),
                    i.to_string()
                ],
            )
            .unwrap();
            let id = conn.last_insert_rowid();
            for s in *scenarios {
                conn.execute(
                    "INSERT INTO scenarios (run_id, name, executor, exec)
                     VALUES (?1, ?2, 'constant-vus', ?2)",
                    params![id, s],
                )
                .unwrap();
            }
        }
        (dir, conn)
    }

    #[test]
    fn a_baseline_is_kept_per_plugin_and_scenario() {
        let (_dir, conn) = store_with(&[
            ("shop", &["browse", "buy"]),
            ("shop", &["browse", "buy"]),
            ("other", &["browse"]),
            ("shop", &["buy"]),
        ]);
        // Run 1 becomes the baseline of `buy` only; run 2 of every scenario it has.
        assert_eq!(set_baseline(&conn, 1, Some("buy")).unwrap(), ["buy"]);
        assert_eq!(set_baseline(&conn, 2, None).unwrap(), ["browse", "buy"]);
        assert_eq!(
            baselines(&conn).unwrap(),
            [
                ("shop".to_string(), "browse".to_string(), 2),
                ("shop".to_string(), "buy".to_string(), 2)
            ]
        );
        assert_eq!(set_baseline(&conn, 1, Some("buy")).unwrap(), ["buy"]);
        // A run of `buy` alone is held to buy's baseline, run 1; another plugin's run
        // of a scenario of the same name has none.
        let buy_alone = get(&conn, 4).unwrap();
        assert_eq!(
            baseline_for(&conn, &buy_alone).unwrap(),
            Some((1, "buy".into()))
        );
        assert_eq!(baseline_for(&conn, &get(&conn, 3).unwrap()).unwrap(), None);
        // Run 2 is its own scenario browse's baseline: held to buy's, run 1.
        assert_eq!(
            baseline_for(&conn, &get(&conn, 2).unwrap()).unwrap(),
            Some((1, "buy".into()))
        );
        let e = set_baseline(&conn, 4, Some("browse"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("run 4 has no scenario `browse`; its scenarios: buy"),
            "{e}"
        );
    }

    #[test]
    fn without_a_baseline_the_previous_run_of_the_same_scenarios_is_taken() {
        let (_dir, conn) = store_with(&[
            ("shop", &["browse"]),
            ("shop", &["browse", "buy"]),
            ("shop", &["browse"]),
            ("other", &["browse"]),
        ]);
        assert_eq!(previous(&conn, &get(&conn, 3).unwrap()).unwrap(), Some(1));
        assert_eq!(previous(&conn, &get(&conn, 1).unwrap()).unwrap(), None);
        assert_eq!(previous(&conn, &get(&conn, 4).unwrap()).unwrap(), None);
        assert_eq!(resolve(&conn, "last").unwrap(), 4);
        assert_eq!(resolve(&conn, "2").unwrap(), 2);
        assert_eq!(resolve(&conn, "/elsewhere/2").unwrap(), 3, "by folder name");
        let e = resolve(&conn, "9").unwrap_err().to_string();
        assert!(e.contains("no run 9 in the store"), "{e}");
    }
}
