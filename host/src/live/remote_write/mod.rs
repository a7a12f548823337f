//! `--out prometheus-rw=URL`: every second, the run's totals so far pushed to a
//! Prometheus remote-write endpoint (protobuf, snappy-compressed), as k6's
//! experimental output does. Counters are cumulative `_total` series, gauges their
//! value, rates the share of true samples (`_rate`), and trends either one gauge per
//! statistic (`_p95`, ...; seconds for timings) or native histograms.
//!
//! The push happens on a task of its own, so a slow Prometheus never holds the run
//! loop: requests queue (a few) and past that a second is skipped, which loses
//! nothing since every push carries the totals.

pub(crate) mod client;
pub(crate) mod native;
pub(crate) mod proto;

use super::frame::Frame;
use super::output::Output;
use super::prom::{labels, metric_name, trend_scale, trend_stat, TREND_STATS};
use crate::config::outputs::{PrometheusOptions, TrendAs};
use crate::metrics::{MetricId, TagSet, Value};
use anyhow::Result;
use bytes::Bytes;
use futures::future::BoxFuture;
use prost::Message;
use proto::{Label, Sample, TimeSeries, WriteRequest};
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::mpsc;

/// Pushes waiting to be sent before a second is skipped.
const QUEUE: usize = 4;

/// Longest the end of the run waits for the last pushes.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Timeout of one push.
const PUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// A remote-write output while the run goes.
pub(crate) struct RemoteWrite {
    url: String,
    options: PrometheusOptions,
    admitted: HashSet<(MetricId, TagSet)>,
    warned_cardinality: bool,
    queue: mpsc::Sender<Bytes>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RemoteWrite {
    /// Starts the task that pushes to `url`.
    pub(crate) fn start(url: &str, options: &PrometheusOptions) -> Result<RemoteWrite> {
        let endpoint = client::Endpoint::new(url, std::env::vars())?;
        let url = client::shown(url);
        let (queue, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(push_loop(endpoint, url.clone(), rx));
        Ok(RemoteWrite {
            url,
            options: options.clone(),
            admitted: HashSet::new(),
            warned_cardinality: false,
            queue,
            task: Some(task),
        })
    }

    /// Queues one push of the totals.
    pub(crate) fn push(&mut self, frame: &Frame<'_>) {
        let request = self.request(frame);
        let mut body = Vec::with_capacity(request.encoded_len());
        if request.encode(&mut body).is_err() {
            return;
        }
        let Ok(compressed) = snap::raw::Encoder::new().compress_vec(&body) else {
            return;
        };
        if self.queue.try_send(Bytes::from(compressed)).is_err() {
            // Full: Prometheus is slow. The next push carries these totals too.
        }
    }

    /// The write request of the totals at `frame`, within the series bound.
    pub(crate) fn request(&mut self, frame: &Frame<'_>) -> WriteRequest {
        let timestamp = (frame.unix * 1000.0) as i64;
        let prefix = &self.options.prefix;
        let mut out = Vec::new();
        let mut left_out = 0usize;
        for ((id, tags), value) in frame.second.totals.totals() {
            let Some(def) = frame.defs.get(*id as usize) else {
                continue;
            };
            let key = (*id, tags.clone());
            if !self.admitted.contains(&key) {
                if self.admitted.len() >= self.options.max_series {
                    left_out += 1;
                    continue;
                }
                self.admitted.insert(key);
            }
            let base = metric_name(prefix, &def.name);
            let labels = labels(tags);
            let series = |name: String, v: f64| TimeSeries {
                labels: with_name(&name, &labels),
                samples: vec![Sample {
                    value: v,
                    timestamp,
                }],
                histograms: Vec::new(),
            };
            match value {
                Value::Counter(c) => out.push(series(format!("{base}_total"), *c)),
                Value::Gauge { value, .. } => out.push(series(base, *value)),
                Value::Rate { hits, total } => {
                    let share = if *total == 0 {
                        0.0
                    } else {
                        *hits as f64 / *total as f64
                    };
                    out.push(series(format!("{base}_rate"), share));
                }
                Value::Trend(h) => {
                    let scale = trend_scale(def);
                    match self.options.trend_as {
                        TrendAs::Percentiles => {
                            for (stat, q) in TREND_STATS {
                                let v = trend_stat(h, stat, *q) * scale;
                                out.push(series(format!("{base}_{stat}"), v));
                            }
                            out.push(series(format!("{base}_count"), h.len() as f64));
                        }
                        TrendAs::Native => {
                            let name = if def.is_time {
                                format!("{base}_seconds")
                            } else {
                                base
                            };
                            out.push(TimeSeries {
                                labels: with_name(&name, &labels),
                                samples: Vec::new(),
                                histograms: vec![native::native(h, scale, timestamp)],
                            });
                        }
                    }
                }
            }
        }
        if left_out > 0 && !self.warned_cardinality {
            self.warned_cardinality = true;
            crate::stderr::warn(format_args!(
                "--out prometheus-rw={}: more than {} series (metric × tags); {left_out} left out. \
                 Group URLs with a `name` tag, or raise [outputs.prometheus] max_series",
                self.url, self.options.max_series
            ));
        }
        WriteRequest { timeseries: out }
    }

    /// Sends what is queued (bounded by [`CLOSE_WAIT`]) and stops.
    pub(crate) async fn close(mut self) {
        let Some(task) = self.task.take() else {
            return;
        };
        // Closing the queue ends the push loop once it has sent what is queued.
        let (closed, _) = mpsc::channel(1);
        drop(std::mem::replace(&mut self.queue, closed));
        let abort = task.abort_handle();
        if tokio::time::timeout(CLOSE_WAIT, task).await.is_err() {
            abort.abort();
            crate::stderr::warn(format_args!(
                "--out prometheus-rw={}: the last pushes were not sent within {} s",
                self.url,
                CLOSE_WAIT.as_secs()
            ));
        }
    }
}

impl Output for RemoteWrite {
    fn describe(&self) -> String {
        format!("--out prometheus-rw={}", self.url)
    }

    fn tick(&mut self, frame: &Frame<'_>) -> Result<()> {
        self.push(frame);
        Ok(())
    }

    fn close(self: Box<Self>, _linger: bool) -> BoxFuture<'static, ()> {
        Box::pin(RemoteWrite::close(*self))
    }
}

impl Drop for RemoteWrite {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// `__name__` first, then the tags (sorted, as remote write wants).
fn with_name(name: &str, labels: &[(String, String)]) -> Vec<Label> {
    std::iter::once(Label {
        name: "__name__".into(),
        value: name.into(),
    })
    .chain(labels.iter().map(|(k, v)| Label {
        name: k.clone(),
        value: v.clone(),
    }))
    .collect()
}

/// Sends each queued push in turn; the first failure (and then every tenth) is warned.
async fn push_loop(mut endpoint: client::Endpoint, url: String, mut rx: mpsc::Receiver<Bytes>) {
    let mut failures = 0u64;
    while let Some(body) = rx.recv().await {
        let outcome = tokio::time::timeout(PUSH_TIMEOUT, endpoint.push(body))
            .await
            .unwrap_or_else(|_| Err(client::PushError::Timeout(PUSH_TIMEOUT.as_secs())));
        if let Err(e) = outcome {
            if failures.is_multiple_of(10) {
                crate::stderr::warn(format_args!(
                    "--out prometheus-rw={url}: push failed ({} so far): {e}",
                    failures + 1
                ));
            }
            failures += 1;
        }
    }
}
