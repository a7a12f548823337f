//! Web vitals as k6 reports them (`browser_web_vital_fcp`, `_lcp`, `_cls`, `_ttfb`,
//! `_inp`, `_fid` (k6 1.1.0 still reports it), each tagged `rating` and `url`): a small script of the host's own, added to
//! every document before the page's scripts run (`Page.addScriptToEvaluateOnNewDocument`),
//! observes the browser's performance entries and reports each value through a
//! binding (`Runtime.addBinding`). FCP, TTFB and FID are final when reported; LCP, CLS and
//! INP grow while the page lives, so the last value of each is kept and recorded when
//! the document goes (a navigation, or the page closing), as web-vitals reports them
//! when the page is hidden.

use super::tagging::MetricNames;
use crate::metrics::{builtin, MetricId, Recorder, TagSet};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The binding the script calls.
pub(crate) const BINDING: &str = "__hostWebVital";

/// The script, run in every frame of every document before the page's own.
pub(crate) const SCRIPT: &str = r#"(() => {
  if (window !== window.top || window.__hostVitals) return;
  window.__hostVitals = true;
  const send = (name, value) => { try { __hostWebVital(JSON.stringify({ name, value, url: location.href })); } catch (e) {} };
  const observe = (type, f, opts) => { try { new PerformanceObserver((l) => l.getEntries().forEach(f)).observe(Object.assign({ type, buffered: true }, opts || {})); } catch (e) {} };
  const ttfb = () => { const n = performance.getEntriesByType('navigation')[0]; if (n && n.responseStart > 0) send('ttfb', Math.max(n.responseStart - (n.activationStart || 0), 0)); };
  if (document.readyState === 'complete') ttfb(); else addEventListener('load', () => setTimeout(ttfb, 0), { once: true });
  observe('paint', (e) => { if (e.name === 'first-contentful-paint') send('fcp', e.startTime); });
  observe('largest-contentful-paint', (e) => send('lcp', e.startTime));
  // CLS is reported for every document, 0 when nothing shifted (as k6 reports it).
  let cls = 0, win = 0, first = 0, last = 0;
  send('cls', 0);
  observe('layout-shift', (e) => {
    if (e.hadRecentInput) return;
    if (win && e.startTime - last < 1000 && e.startTime - first < 5000) { win += e.value; } else { win = e.value; first = e.startTime; }
    last = e.startTime;
    if (win > cls) { cls = win; send('cls', cls); }
  });
  let inp = 0;
  observe('event', (e) => { if (e.interactionId && e.duration > inp) { inp = e.duration; send('inp', inp); } }, { durationThreshold: 16 });
  observe('first-input', (e) => { send('fid', e.processingStart - e.startTime); if (e.duration > inp) { inp = e.duration; send('inp', inp); } });
})();"#;

/// A vital's metric and the web-vitals thresholds of its ratings (good up to the
/// first, poor above the second).
fn metric(name: &str) -> Option<(MetricId, f64, f64)> {
    Some(match name {
        "fcp" => (builtin::BROWSER_WEB_VITAL_FCP, 1800.0, 3000.0),
        "lcp" => (builtin::BROWSER_WEB_VITAL_LCP, 2500.0, 4000.0),
        "cls" => (builtin::BROWSER_WEB_VITAL_CLS, 0.1, 0.25),
        "ttfb" => (builtin::BROWSER_WEB_VITAL_TTFB, 800.0, 1800.0),
        "inp" => (builtin::BROWSER_WEB_VITAL_INP, 200.0, 500.0),
        "fid" => (builtin::BROWSER_WEB_VITAL_FID, 100.0, 300.0),
        _ => return None,
    })
}

/// `good`, `needs-improvement` or `poor`, as web-vitals rates `value`.
pub(crate) fn rating(value: f64, good: f64, poor: f64) -> &'static str {
    if value <= good {
        "good"
    } else if value <= poor {
        "needs-improvement"
    } else {
        "poor"
    }
}

/// One page's vitals: those that are final are recorded at once, the others kept
/// until the document goes.
pub(crate) struct Vitals {
    tags: TagSet,
    names: Arc<MetricNames>,
    pending: Mutex<HashMap<&'static str, (f64, String)>>,
}

impl Vitals {
    /// The vitals of a page whose metrics carry `tags`, their URLs grouped by
    /// `names` (a document is loaded with GET).
    pub(crate) fn new(tags: TagSet, names: Arc<MetricNames>) -> Vitals {
        Vitals {
            tags,
            names,
            pending: Mutex::default(),
        }
    }

    /// Takes one report of the script (the binding's payload).
    pub(crate) fn report(&self, recorder: &Recorder, payload: &str) {
        let Ok(v) = serde_json::from_str::<Value>(payload) else {
            return;
        };
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(value) = v
            .get("value")
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite())
        else {
            return;
        };
        let url = crate::bounded::cut(
            v.get("url").and_then(Value::as_str).unwrap_or(""),
            crate::bounded::TAG_BYTES,
        )
        .into_owned();
        match name {
            "fcp" | "ttfb" | "fid" => self.record(recorder, name, value, &url),
            "lcp" => self.keep("lcp", value, url),
            "cls" => self.keep("cls", value, url),
            "inp" => self.keep("inp", value, url),
            _ => {}
        }
    }

    fn keep(&self, name: &'static str, value: f64, url: String) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, (value, url));
    }

    fn record(&self, recorder: &Recorder, name: &str, value: f64, url: &str) {
        let Some((id, good, poor)) = metric(name) else {
            return;
        };
        let grouped = self.names.name_of(url, Some("GET"));
        let tags = self.tags.with([
            ("rating", rating(value, good, poor)),
            ("url", grouped.as_deref().unwrap_or(url)),
        ]);
        // Trends keep thousandths: milliseconds to the microsecond, CLS to 0.001.
        recorder.trend(id, &tags, (value.max(0.0) * 1000.0).round() as u64);
    }

    /// Records what was kept: the document is going.
    pub(crate) fn flush(&self, recorder: &Recorder) {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        for (name, (value, url)) in pending {
            self.record(recorder, name, value, &url);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_are_web_vitals() {
        assert_eq!(rating(1800.0, 1800.0, 3000.0), "good");
        assert_eq!(rating(1801.0, 1800.0, 3000.0), "needs-improvement");
        assert_eq!(rating(3001.0, 1800.0, 3000.0), "poor");
        assert_eq!(rating(0.1, 0.1, 0.25), "good");
        assert_eq!(rating(0.3, 0.1, 0.25), "poor");
    }
}
