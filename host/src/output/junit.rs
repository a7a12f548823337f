//! `junit.xml`: one test case per threshold, so CI systems show which ones failed; a
//! failed threshold carries a `<failure>` with the observed value, and one whose metric
//! got no samples is `<skipped>` when it passed (`allow_missing`). A run that measured
//! nothing adds a failed test case of its own, so a CI job that reads only this file
//! does not pass it.

use crate::summary::Summary;
use quick_xml::escape::escape;
use std::fmt::Write;

/// Renders the file.
pub(crate) fn render(summary: &Summary) -> String {
    let e = |s: &str| escape(s).into_owned();
    let measured_nothing = usize::from(summary.failure.is_some());
    let tests = summary.thresholds.len() + measured_nothing;
    let failures = summary.thresholds.iter().filter(|t| !t.ok).count() + measured_nothing;
    let skipped = summary
        .thresholds
        .iter()
        .filter(|t| t.ok && t.observed.is_none())
        .count();
    let suite = format!("{} thresholds", summary.plugin.name);
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"host\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{:.3}\">",
        summary.duration_s
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\" errors=\"0\" time=\"{:.3}\" timestamp=\"{}\">",
        e(&suite),
        summary.duration_s,
        e(&summary.started_at)
    );
    if let Some(failure) = &summary.failure {
        let _ = writeln!(
            xml,
            "    <testcase classname=\"run\" name=\"measured something\">\n      <failure type=\"run\" message=\"{}\">the run measured nothing: {}</failure>\n    </testcase>",
            e(failure),
            e(failure)
        );
    }
    for t in &summary.thresholds {
        let _ = write!(
            xml,
            "    <testcase classname=\"thresholds.{}\" name=\"{}\"",
            e(&t.metric),
            e(&t.threshold)
        );
        if t.ok && t.observed.is_some() {
            xml.push_str("/>\n");
            continue;
        }
        xml.push_str(">\n");
        if !t.ok {
            let message = match (t.observed, &t.note) {
                (None, Some(note)) => note.clone(),
                _ => format!("{} (expected {})", t.observed_text(), t.threshold),
            };
            let _ = writeln!(
                xml,
                "      <failure type=\"threshold\" message=\"{}\">{} on {}: observed {}{}</failure>",
                e(&message),
                e(&t.threshold),
                e(&t.metric),
                e(&t.observed_text()),
                if t.aborted_run { "; it stopped the run" } else { "" }
            );
        } else {
            let _ = writeln!(
                xml,
                "      <skipped message=\"{}\"/>",
                e(t.note.as_deref().unwrap_or("no samples"))
            );
        }
        xml.push_str("    </testcase>\n");
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}
