//! A stored run's per-second data, rebuilt as the significance test reads it from a
//! results folder ([`significance::Series`]), and percentiles of any window recomputed
//! by merging the stored interval histograms (HDR histograms merge exactly).

use crate::output::significance::{self, Series};
use anyhow::{Context, Result};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use rusqlite::{params, Connection};

/// Run `id`'s seconds: counters' and rates' values, trends' histograms.
pub(crate) fn load(conn: &Connection, id: i64) -> Result<Option<Series>> {
    let seconds: Option<i64> =
        conn.query_row("SELECT seconds FROM runs WHERE id = ?1", [id], |r| r.get(0))?;
    let Some(seconds) = seconds.filter(|n| *n > 0) else {
        return Ok(None);
    };
    let mut series = Series {
        seconds: seconds as usize,
        ..Series::default()
    };
    let mut stmt = conn.prepare("SELECT metric, per_second FROM seconds WHERE run_id = ?1")?;
    for row in stmt.query_map([id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })? {
        let (metric, text) = row?;
        let values: Vec<f64> = serde_json::from_str(&text)
            .with_context(|| format!("run {id}'s seconds of {metric} in the store are damaged"))?;
        series.values.insert(metric, values);
    }
    let mut deserializer = Deserializer::new();
    let mut stmt = conn.prepare(
        "SELECT metric, length_ms, histogram FROM intervals WHERE run_id = ?1 ORDER BY metric, start_ms",
    )?;
    let mut rows = stmt.query([id])?;
    while let Some(r) = rows.next()? {
        let metric: String = r.get(0)?;
        let length_ms: f64 = r.get(1)?;
        if length_ms / 1000.0 < significance::WHOLE_SECOND {
            continue;
        }
        let h = decode(&mut deserializer, &r.get::<_, Vec<u8>>(2)?, id, &metric)?;
        series
            .trends
            .entry(metric)
            .or_default()
            .push(significance::second_of(&h));
    }
    Ok(Some(series))
}

/// The histogram of `metric` over the intervals of run `id` that start within
/// `[from_s, to_s)` seconds of the run's start (all of them without a window), in the
/// logs' unit (microseconds for timings); `None` when there is none.
pub(crate) fn merged(
    conn: &Connection,
    id: i64,
    metric: &str,
    window: Option<(f64, f64)>,
) -> Result<Option<Histogram<u64>>> {
    let (from, to) = window.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    let mut stmt = conn.prepare(
        "SELECT start_ms, histogram FROM intervals WHERE run_id = ?1 AND metric = ?2 ORDER BY start_ms",
    )?;
    let mut rows = stmt.query(params![id, metric])?;
    let mut deserializer = Deserializer::new();
    let mut total: Option<Histogram<u64>> = None;
    while let Some(r) = rows.next()? {
        let start_s = r.get::<_, f64>(0)? / 1000.0;
        if start_s < from || start_s >= to {
            continue;
        }
        let h = decode(&mut deserializer, &r.get::<_, Vec<u8>>(1)?, id, metric)?;
        match &mut total {
            Some(t) => t
                .add(&h)
                .map_err(|e| anyhow::anyhow!("cannot merge {metric}'s intervals: {e:?}"))?,
            None => {
                // Later intervals may hold values beyond this one's range.
                let mut first = h;
                first.auto(true);
                total = Some(first);
            }
        }
    }
    Ok(total)
}

/// A statistic (`p95`, `med`, `avg`, `min`, `max`, `count`, `p99.9`) of a merged
/// histogram, in milliseconds for timings (the logs hold microseconds).
pub(crate) fn stat_of(h: &Histogram<u64>, stat: &str) -> Option<f64> {
    let ms = |v: f64| v / 1000.0;
    Some(match stat {
        "count" => h.len() as f64,
        "avg" => ms(h.mean()),
        "min" => ms(h.min() as f64),
        "max" => ms(h.max() as f64),
        "med" => ms(h.value_at_quantile(0.5) as f64),
        other => {
            let q: f64 = other.strip_prefix('p')?.parse().ok()?;
            ms(h.value_at_quantile(q / 100.0) as f64)
        }
    })
}

fn decode(
    deserializer: &mut Deserializer,
    bytes: &[u8],
    id: i64,
    metric: &str,
) -> Result<Histogram<u64>> {
    deserializer.deserialize(&mut &bytes[..]).map_err(|e| {
        anyhow::anyhow!("run {id}'s {metric} interval in the store does not decode: {e:?}")
    })
}
