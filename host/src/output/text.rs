//! The end-of-test summary as people read it (and as `summary.txt` keeps it), laid out
//! like k6's: scenarios, checks, then one line per metric.

use crate::config::TrendStat;
use crate::metrics::summary::{MetricSummary, Stats};
use crate::summary::Summary;
use std::fmt::Write;

/// Text from the plugin (or a worker, a target) on one line of the summary: terminal
/// controls, line breaks and bidirectional overrides escaped (the one rule,
/// [`crate::stderr::escape_controls`]), so a plugin's error message can neither drive
/// the operator's terminal nor forge a line of the summary.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::stderr::escape_controls(text, false)
}

/// Renders the summary. What the plugin said is escaped field by field ([`shown`]),
/// and the whole once more (lines kept), so no field left out can carry an escape.
pub(crate) fn render(s: &Summary) -> String {
    crate::stderr::escape_controls(&render_raw(s), true).into_owned()
}

fn render_raw(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n  plugin: {} {} ({})",
        shown(&s.plugin.name),
        shown(&s.plugin.version),
        s.plugin.file.path.display()
    );
    let _ = writeln!(out, "  status: {} after {:.1}s", s.status, s.duration_s);
    // Time spent before the start is said where it was long enough to notice: a run
    // that took 13 s said 3.0 s and nothing else (issue 49 item 16).
    if s.vus_init_s >= 1.0 {
        let _ = writeln!(
            out,
            "  VUs initialised in {:.1}s before the start (their init, not in the run's duration)",
            s.vus_init_s
        );
    }
    if let Some(reason) = &s.stop_reason {
        let _ = writeln!(out, "  stopped by: {}", shown(&reason.to_string()));
    }
    if let Some(failure) = &s.failure {
        let _ = writeln!(out, "  measured nothing: {}", shown(failure));
    }
    let _ = writeln!(out, "\n  scenarios:");
    for (name, sc) in &s.scenarios {
        let _ = writeln!(
            out,
            "    {name} ({}, exec={}): {} complete ({} failed), {} interrupted, {} dropped iterations; {} VUs",
            sc.executor, sc.exec, sc.completed, sc.failed, sc.interrupted, sc.dropped, sc.vus_allocated
        );
        for (i, st) in sc.stages.iter().enumerate() {
            let _ = writeln!(
                out,
                "      stage {}: target {} → at end {}, peak {}",
                i + 1,
                st.target,
                st.at_end,
                st.peak
            );
        }
    }
    if !s.checks.is_empty() {
        let _ = writeln!(out);
        for c in &s.checks {
            let total = c.passes + c.fails;
            if c.fails == 0 {
                let _ = writeln!(out, "     ✓ {}", shown(&c.name));
            } else {
                let _ = writeln!(out, "     ✗ {}", shown(&c.name));
                let _ = writeln!(
                    out,
                    "      ↳  {:.0}% — ✓ {} / ✗ {}",
                    100.0 * c.passes as f64 / total.max(1) as f64,
                    c.passes,
                    c.fails
                );
            }
        }
    }
    let h = &s.http;
    let not_sent: u64 = h.not_sent.values().sum();
    if h.sent + not_sent + h.denied > 0 {
        let kinds = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = write!(
            out,
            "\n  http: sent {}, received {} (succeeded {}), failed {}",
            h.sent, h.received, h.succeeded, h.failed
        );
        if !h.errors.is_empty() {
            let _ = write!(out, " ({})", kinds(&h.errors));
        }
        let _ = write!(out, ", in flight at end {}", h.in_flight);
        if not_sent > 0 {
            let _ = write!(out, "; not sent {not_sent} ({})", kinds(&h.not_sent));
        }
        let _ = writeln!(out, "; denied {}", h.denied);
    }
    if !s.grpc_failures.is_empty() {
        let list: Vec<String> = s
            .grpc_failures
            .iter()
            .map(|f| format!("{} × {} ({:?})", f.status, f.count, shown(&f.message)))
            .collect();
        let _ = writeln!(out, "  grpc failures: {}", list.join(", "));
    }
    if let Some(tls) = &s.tls {
        let list = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "  tls: {} handshakes ({}); cipher suites {}",
            tls.handshakes,
            list(&tls.versions),
            list(&tls.cipher_suites)
        );
    }
    if let Some(c) = &s.connections {
        let list = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = write!(out, "  connections: {}", list(&c.opened));
        if !c.tls_handshakes.is_empty() {
            let _ = write!(out, "; tls handshakes {}", list(&c.tls_handshakes));
        }
        if c.alt_svc_upgrades > 0 {
            let _ = write!(
                out,
                "; {} upgrades to HTTP/3 on Alt-Svc",
                c.alt_svc_upgrades
            );
        }
        if c.alt_svc_denied > 0 {
            let _ = write!(
                out,
                "; {} Alt-Svc alternatives denied by the allowlist",
                c.alt_svc_denied
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out);
    for m in s.metrics.values() {
        let _ = writeln!(out, "     {}", metric_line(m, &s.trend_stats));
    }
    if !s.endpoints.is_empty() {
        let width = s
            .endpoints
            .iter()
            .map(|e| e.method.len() + e.name.len() + 1)
            .max()
            .unwrap_or(0)
            .min(60);
        let _ = writeln!(
            out,
            "\n  endpoints:{:pad$}  count     rate   errors      p50      p95      p99",
            "",
            pad = width.saturating_sub(6)
        );
        for e in &s.endpoints {
            let label = format!("{} {}", e.method, e.name);
            let _ = writeln!(
                out,
                "    {label:<width$}  {:>7} {:>6.1}/s {:>7.2}% {:>8} {:>8} {:>8}",
                e.count,
                e.rate,
                e.error_rate * 100.0,
                time(e.p50),
                time(e.p95),
                time(e.p99)
            );
        }
    }
    if !s.thresholds.is_empty() {
        let _ = writeln!(out, "\n  thresholds:");
        for t in &s.thresholds {
            let mark = if t.ok { '✓' } else { '✗' };
            let _ = write!(
                out,
                "     {mark} {}: {} ({})",
                t.metric,
                t.threshold,
                t.observed_text()
            );
            if let Some(note) = &t.note {
                let _ = write!(out, " — {note}");
            }
            let _ = writeln!(out);
        }
    }
    if !s.plugin_errors.is_empty() {
        let _ = writeln!(out, "\n  plugin errors:");
        for e in &s.plugin_errors {
            let _ = writeln!(
                out,
                "    {:>6} × {} in {}: {}",
                e.count,
                e.kind.as_str(),
                shown(&e.scenario),
                shown(&e.message)
            );
        }
        if s.plugin_errors_unlisted > 0 {
            let _ = writeln!(
                out,
                "    ({} more with other messages)",
                s.plugin_errors_unlisted
            );
        }
    }
    workers(&mut out, s);
    if let Some(stack) = &s.stack {
        let _ = writeln!(
            out,
            "\n  resources (every {} s; CPU in % of one core):",
            stack.stats_interval_s
        );
        for r in &stack.services {
            let limit = match (r.memory_peak_share, r.memory_limit_bytes) {
                (Some(share), Some(limit)) => format!(
                    " ({:.0}% of {})",
                    share * 100.0,
                    crate::sampling::files::bytes(limit)
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "    {} ({}): CPU avg {:.1}%, peak {:.1}% ({:.0}% of {} core{}); memory peak {}{limit}",
                r.service,
                r.source,
                r.cpu_avg_percent,
                r.cpu_peak_percent,
                r.cpu_peak_share * 100.0,
                r.cpus,
                if r.cpus == 1.0 { "" } else { "s" },
                crate::sampling::files::bytes(r.memory_peak_bytes),
            );
        }
    }
    bottleneck(&mut out, s);
    if !s.warnings.is_empty() {
        let _ = writeln!(out, "\n  warnings:");
        for w in &s.warnings {
            let _ = writeln!(out, "    ! {}", shown(w));
        }
    }
    out
}

/// Who was the bottleneck, in one line (the reasons are among the warnings).
fn bottleneck(out: &mut String, s: &Summary) {
    use crate::sampling::saturation::Who;
    let b = &s.bottleneck;
    let f = &b.figures;
    let who = match b.who {
        Who::None => return,
        Who::Target => "the target (all VUs busy while its latency rose)",
        Who::VuPool => "the VU pool (all VUs busy at the target's steady latency; raise max_vus)",
        Who::Generator => {
            "the load generator (its CPU or late starts; the figures are a lower bound)"
        }
        Who::TargetUnreachable => {
            "none: the target stopped answering (most requests could not connect)"
        }
    };
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    let _ = writeln!(
        out,
        "\n  bottleneck: {who}\n    target: p50 {}, served {:.1} iterations/s; generator: CPU avg {:.0}%, peak {:.0}% of {} core{}, iteration_start_lag p99 {}",
        ms(f.latency_p50_ms),
        f.served_per_s,
        f.generator_cpu_avg_percent,
        f.generator_cpu_peak_percent,
        f.generator_cpus,
        if f.generator_cpus == 1.0 { "" } else { "s" },
        ms(f.start_lag_p99_ms),
    );
}

/// One metric's line; a trend shows `columns` (`--summary-trend-stats`) in order.
/// A distributed run's workers, one line each: who ran which segment, and what each
/// did (the merged figures above are their sum).
fn workers(out: &mut String, s: &Summary) {
    if s.workers.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n  workers:");
    for w in &s.workers {
        let p95 = w
            .http_req_duration
            .as_ref()
            .map(|t| format!(", http_req_duration p95 {}", time(t.p95)))
            .unwrap_or_default();
        let errors = match w.plugin_errors {
            0 => String::new(),
            n => format!(", {n} plugin errors"),
        };
        let lost = match (w.lost_at_s, &w.lost) {
            (Some(at), Some(why)) => format!("; lost at {at:.1}s: {why}"),
            _ => String::new(),
        };
        let lost = match w.http_reqs_not_merged {
            Some(n) => format!("{lost} (about {n} requests after its last report not merged)"),
            None => lost,
        };
        let _ = writeln!(
            out,
            "    {} {} ({}): segment {}: {} requests, {} iterations{p95}{errors}{lost}",
            w.index, w.name, w.address, w.segment, w.http_reqs, w.iterations
        );
    }
}

fn metric_line(m: &MetricSummary, columns: &[TrendStat]) -> String {
    let def = m.def.as_ref();
    let is_time = def.is_some_and(|d| d.is_time);
    let is_bytes = def.is_some_and(|d| d.is_bytes);
    let dots = ".".repeat(34usize.saturating_sub(m.name.len()));
    let body = match &m.stats {
        Stats::Counter { count, rate } if is_bytes => {
            format!("{} {}/s", bytes(*count), bytes(*rate))
        }
        Stats::Counter { count, rate } => format!("{} {:.2}/s", number(*count), rate),
        Stats::Gauge { value, min, max } => format!(
            "{} min={} max={}",
            number(*value),
            number(*min),
            number(*max)
        ),
        Stats::Rate {
            rate,
            passes,
            fails,
        } => format!("{:.2}% ✓ {passes} ✗ {fails}", rate * 100.0),
        Stats::Trend(t) => {
            let f = |v: f64| if is_time { time(v) } else { number(v) };
            let columns = if columns.is_empty() {
                crate::config::trend_stats::DEFAULT
            } else {
                columns
            };
            columns
                .iter()
                .map(|c| match c {
                    TrendStat::Count => format!("count={}", t.count),
                    c => format!("{}={}", c.label(), f(c.value(t))),
                })
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    format!("{}{dots}: {body}", m.name)
}

/// Milliseconds as k6 prints them: µs, ms or s.
fn time(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0}µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.2}ms")
    } else {
        format!("{:.2}s", ms / 1000.0)
    }
}

fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} {}", UNITS[0])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// `host inspect`: what a plugin says of itself.
pub(crate) fn render_inspection(i: &crate::plugin::Inspected) -> String {
    let mut out = String::new();
    let info = &i.info;
    let _ = writeln!(out, "name:        {}", shown(&info.name));
    let _ = writeln!(out, "version:     {}", shown(&info.version));
    let _ = writeln!(out, "description: {}", shown(&info.description));
    let interfaces = crate::plugin::validate::interfaces(
        &i.plugin.engine,
        i.plugin.pre.instance_pre().component(),
    );
    let _ = writeln!(
        out,
        "contract:    {}@{} (WIT version it was built against: {})",
        crate::plugin::bindings::WIT_PACKAGE,
        crate::plugin::bindings::WIT_VERSION,
        interfaces.contract.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(out, "file:        {}", i.plugin.meta.path.display());
    let _ = writeln!(out, "size:        {} bytes", i.plugin.meta.size);
    let _ = writeln!(out, "sha256:      {}", i.plugin.meta.sha256);
    let _ = writeln!(
        out,
        "compile:     {} in {:.0} ms",
        if i.plugin.meta.from_cache {
            "loaded from the compile cache"
        } else {
            "compiled now, and cached for the next run,"
        },
        i.plugin.meta.load_ms
    );
    let _ = writeln!(
        out,
        "uses:        {}",
        if interfaces.contract_imports.is_empty() {
            "nothing of the host".to_string()
        } else {
            interfaces.contract_imports.join(", ")
        }
    );
    let _ = writeln!(out, "wasi:        {}", interfaces.other_imports.join(", "));
    if let Some(note) = no_access_note(&interfaces.other_imports) {
        let _ = writeln!(out, "             {note}");
    }
    let _ = writeln!(
        out,
        "source:      {}",
        i.embedded.source.as_deref().unwrap_or("(not embedded)")
    );
    let _ = writeln!(out, "scenarios:");
    for s in &info.scenarios {
        let _ = writeln!(out, "  {:<16} {}", shown(&s.name), shown(&s.description));
    }
    let _ = writeln!(out, "default config:");
    for line in info.default_config.lines() {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(readme) = &i.embedded.readme {
        let _ = writeln!(out, "readme:");
        for line in readme.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    // The plugin's texts (its readme and config span lines): no terminal controls.
    crate::stderr::escape_controls(&out, true).into_owned()
}

/// What a plugin's runtime imports of `wasi:sockets` and `wasi:filesystem` give it:
/// nothing. They are linked because a language runtime (CPython, Rust's std) imports
/// them whether the scenario uses them or not, and each VU's WASI context has no
/// preopened directory and denies TCP, UDP and name lookups.
fn no_access_note(imports: &[String]) -> Option<String> {
    let has = |prefix: &str| imports.iter().any(|i| i.starts_with(prefix));
    let named: Vec<&str> = ["wasi:sockets", "wasi:filesystem"]
        .into_iter()
        .filter(|p| has(p))
        .collect();
    if named.is_empty() {
        return None;
    }
    let (list, verb) = match named.as_slice() {
        [one] => (format!("{one} is"), "has"),
        _ => (named.join(" and ") + " are", "have"),
    };
    Some(format!(
        "({list} linked, as the plugin's runtime imports them, but {verb} no access: no \
         directory is opened to the plugin and every socket is refused; its requests go \
         through the host's imports and the run's allowlist)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_sockets_and_files_are_said_to_have_no_access() {
        let imports = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let both = no_access_note(&imports(&[
            "wasi:cli/environment@0.2.0",
            "wasi:filesystem/preopens@0.2.0",
            "wasi:sockets/tcp@0.2.0",
        ]))
        .unwrap();
        assert!(
            both.starts_with("(wasi:sockets and wasi:filesystem are linked")
                && both.contains("have no access"),
            "{both}"
        );
        let one = no_access_note(&imports(&["wasi:filesystem/types@0.2.0"])).unwrap();
        assert!(one.starts_with("(wasi:filesystem is linked") && one.contains("has no access"));
        assert_eq!(
            no_access_note(&imports(&["wasi:clocks/monotonic-clock@0.2.0"])),
            None
        );
    }

    #[test]
    fn units_are_readable() {
        assert_eq!(time(0.5), "500µs");
        assert_eq!(time(12.345), "12.35ms");
        assert_eq!(time(2500.0), "2.50s");
        assert_eq!(bytes(999.0), "999 B");
        assert_eq!(bytes(1_500_000.0), "1.5 MB");
        assert_eq!(number(3.0), "3");
    }
}
