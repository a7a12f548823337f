//! Metric names and kinds: the built-ins (k6's names) at fixed ids, and custom metrics
//! that plugins declare by using them.

use super::value::MetricKind;
use std::collections::HashMap;
use std::sync::RwLock;

/// Index of a metric in the registry.
pub(crate) type MetricId = u16;

/// What a metric is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricDef {
    /// Its name (`http_req_duration`).
    pub name: String,
    /// How samples combine.
    pub kind: MetricKind,
    /// Whether a trend's values are durations in microseconds (shown as times).
    pub is_time: bool,
    /// Whether a counter counts bytes (shown as sizes).
    pub is_bytes: bool,
}

macro_rules! builtins {
    ($( $id:ident = $name:literal : $kind:ident $(, $flag:ident)? ; )*) => {
        /// Ids of the built-in metrics.
        pub(crate) mod builtin {
            use super::MetricId;
            builtins!(@ids 0u16; $($id)*);
        }
        const BUILTINS: &[(&str, MetricKind, &str)] = &[
            $( ($name, MetricKind::$kind, builtins!(@flag $($flag)?)), )*
        ];
    };
    (@ids $n:expr; $id:ident $($rest:ident)*) => {
        #[doc = concat!("The built-in metric `", stringify!($id), "`.")]
        pub(crate) const $id: MetricId = $n;
        builtins!(@ids $n + 1; $($rest)*);
    };
    (@ids $n:expr;) => {};
    (@flag time) => { "time" };
    (@flag bytes) => { "bytes" };
    (@flag) => { "" };
}

builtins! {
    HTTP_REQS = "http_reqs": Counter;
    HTTP_REQ_DURATION = "http_req_duration": Trend, time;
    HTTP_REQ_BLOCKED = "http_req_blocked": Trend, time;
    HTTP_REQ_CONNECTING = "http_req_connecting": Trend, time;
    HTTP_REQ_TLS_HANDSHAKING = "http_req_tls_handshaking": Trend, time;
    HTTP_REQ_SENDING = "http_req_sending": Trend, time;
    HTTP_REQ_WAITING = "http_req_waiting": Trend, time;
    HTTP_REQ_RECEIVING = "http_req_receiving": Trend, time;
    HTTP_REQ_FAILED = "http_req_failed": Rate;
    HTTP_REQS_SENT = "http_reqs_sent": Counter;
    HTTP_REQS_DENIED = "http_reqs_denied": Counter;
    HTTP_REQ_ERRORS = "http_req_errors": Counter;
    HTTP_REQS_IN_FLIGHT = "http_reqs_in_flight": Gauge;
    ITERATIONS = "iterations": Counter;
    ITERATION_DURATION = "iteration_duration": Trend, time;
    ITERATION_START_LAG = "iteration_start_lag": Trend, time;
    ITERATION_LATENCY = "iteration_latency": Trend, time;
    INTERRUPTED_ITERATIONS = "interrupted_iterations": Counter;
    DROPPED_ITERATIONS = "dropped_iterations": Counter;
    PLUGIN_ERRORS = "plugin_errors": Counter;
    VUS = "vus": Gauge;
    VUS_MAX = "vus_max": Gauge;
    DATA_SENT = "data_sent": Counter, bytes;
    DATA_RECEIVED = "data_received": Counter, bytes;
    CHECKS = "checks": Rate;
    WS_SESSIONS = "ws_sessions": Counter;
    WS_CONNECTING = "ws_connecting": Trend, time;
    WS_MSGS_SENT = "ws_msgs_sent": Counter;
    WS_MSGS_RECEIVED = "ws_msgs_received": Counter;
    WS_SESSION_DURATION = "ws_session_duration": Trend, time;
    WS_PING = "ws_ping": Trend, time;
    WS_ERRORS = "ws_errors": Counter;
    WS_SOCKETS_OPEN = "ws_sockets_open": Gauge;
    HTTP_REQS_UNSENT = "http_reqs_unsent": Counter;
    GRPC_REQS = "grpc_reqs": Counter;
    GRPC_REQ_DURATION = "grpc_req_duration": Trend, time;
    GRPC_REQ_FAILED = "grpc_req_failed": Rate;
    GRPC_STREAMS = "grpc_streams": Counter;
    GRPC_STREAMS_MSGS_SENT = "grpc_streams_msgs_sent": Counter;
    GRPC_STREAMS_MSGS_RECEIVED = "grpc_streams_msgs_received": Counter;
    SOCKET_CONNECTS = "socket_connects": Counter;
    SOCKET_CONNECTING = "socket_connecting": Trend, time;
    SOCKET_CONNECTS_DENIED = "socket_connects_denied": Counter;
    SOCKET_ERRORS = "socket_errors": Counter;
    SOCKETS_OPEN = "sockets_open": Gauge;
    BROWSER_WEB_VITAL_FCP = "browser_web_vital_fcp": Trend, time;
    BROWSER_WEB_VITAL_LCP = "browser_web_vital_lcp": Trend, time;
    BROWSER_WEB_VITAL_CLS = "browser_web_vital_cls": Trend;
    BROWSER_WEB_VITAL_TTFB = "browser_web_vital_ttfb": Trend, time;
    BROWSER_WEB_VITAL_INP = "browser_web_vital_inp": Trend, time;
    BROWSER_WEB_VITAL_FID = "browser_web_vital_fid": Trend, time;
    BROWSER_HTTP_REQ_DURATION = "browser_http_req_duration": Trend, time;
    BROWSER_HTTP_REQ_FAILED = "browser_http_req_failed": Rate;
    BROWSER_DATA_SENT = "browser_data_sent": Counter, bytes;
    BROWSER_DATA_RECEIVED = "browser_data_received": Counter, bytes;
}

/// Why a custom metric could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name exists with another kind.
    #[error("metric `{name}` is a {existing:?}, it cannot be used as a {requested:?}")]
    KindMismatch {
        /// The metric.
        name: String,
        /// Its kind.
        existing: MetricKind,
        /// The kind asked for.
        requested: MetricKind,
    },
    /// The name is not `[A-Za-z_][A-Za-z0-9_]*` or too long.
    #[error("metric name {0:?} is invalid: use letters, digits and _ (at most 128)")]
    BadName(String),
    /// Too many distinct metrics.
    #[error("too many custom metrics (the limit is {0})")]
    TooMany(usize),
    /// The name is a built-in's: samples of a plugin's own under it would be merged
    /// with the host's and could make a threshold on it pass while the real
    /// requests fail.
    #[error(
        "`{0}` is a built-in metric the host records itself; a plugin cannot add samples \
         to it: give yours another name (for example `my_{0}`)"
    )]
    BuiltIn(String),
}

/// Most custom metrics a run holds.
pub(crate) const MAX_METRICS: usize = 1024;

/// All metrics of a run.
pub struct Registry {
    inner: RwLock<Inner>,
}

struct Inner {
    defs: Vec<MetricDef>,
    by_name: HashMap<String, MetricId>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry holding the built-ins.
    pub fn new() -> Self {
        let defs: Vec<MetricDef> = BUILTINS
            .iter()
            .map(|(name, kind, flag)| MetricDef {
                name: name.to_string(),
                kind: *kind,
                is_time: *flag == "time",
                is_bytes: *flag == "bytes",
            })
            .collect();
        let by_name = defs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.clone(), i as MetricId))
            .collect();
        Self {
            inner: RwLock::new(Inner { defs, by_name }),
        }
    }

    /// The id of `name`, registering it as `kind` if new.
    pub fn get_or_register(&self, name: &str, kind: MetricKind) -> Result<MetricId, RegistryError> {
        if let Some(id) = self.lookup(name) {
            let existing = self.def(id).kind;
            return if existing == kind {
                Ok(id)
            } else {
                Err(RegistryError::KindMismatch {
                    name: name.to_string(),
                    existing,
                    requested: kind,
                })
            };
        }
        if !is_valid_name(name) {
            // Quoted in a warning: a long name is cut.
            let shown = crate::bounded::cut(name, crate::bounded::QUOTED_BYTES);
            return Err(RegistryError::BadName(shown.into_owned()));
        }
        let mut inner = self.inner.write().expect("registry lock");
        if let Some(id) = inner.by_name.get(name) {
            return Ok(*id);
        }
        if inner.defs.len() >= MAX_METRICS {
            return Err(RegistryError::TooMany(MAX_METRICS));
        }
        let id = inner.defs.len() as MetricId;
        inner.defs.push(MetricDef {
            name: name.to_string(),
            kind,
            is_time: false,
            is_bytes: false,
        });
        inner.by_name.insert(name.to_string(), id);
        Ok(id)
    }

    /// The id of a plugin's custom metric `name`, registering it as `kind` if new; a
    /// built-in's name is refused ([`RegistryError::BuiltIn`]), whatever the kind.
    pub fn custom(&self, name: &str, kind: MetricKind) -> Result<MetricId, RegistryError> {
        if is_builtin(name) {
            return Err(RegistryError::BuiltIn(name.to_string()));
        }
        self.get_or_register(name, kind)
    }

    /// Registers `name` as a trend of times (values in milliseconds, held to the
    /// microsecond), or marks the trend of that name as one. Nothing happens to a name
    /// of another kind or one the registry refuses: adding to it says why.
    pub fn mark_time(&self, name: &str) {
        let Ok(id) = self.custom(name, MetricKind::Trend) else {
            return;
        };
        let mut inner = self.inner.write().expect("registry lock");
        inner.defs[id as usize].is_time = true;
    }

    /// The id of an existing metric.
    pub fn lookup(&self, name: &str) -> Option<MetricId> {
        self.inner
            .read()
            .expect("registry lock")
            .by_name
            .get(name)
            .copied()
    }

    /// The definition of `id`.
    pub fn def(&self, id: MetricId) -> MetricDef {
        self.inner.read().expect("registry lock").defs[id as usize].clone()
    }

    /// Every metric, in id order.
    pub fn all(&self) -> Vec<MetricDef> {
        self.inner.read().expect("registry lock").defs.clone()
    }
}

/// Whether `name` is one of the host's own metrics (k6's built-ins and the host's).
pub(crate) fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|(n, _, _)| *n == name)
}

/// The one rule for metric names, used where metrics are registered and where
/// thresholds name them: letters, digits and `_`, not starting with a digit, 1 to 128
/// characters.
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_have_fixed_ids_and_custom_metrics_check_kinds() {
        let r = Registry::new();
        assert_eq!(r.def(builtin::HTTP_REQS).name, "http_reqs");
        assert!(r.def(builtin::HTTP_REQ_DURATION).is_time);
        assert_eq!(r.lookup("checks"), Some(builtin::CHECKS));
        let id = r.get_or_register("orders", MetricKind::Counter).unwrap();
        assert_eq!(
            r.get_or_register("orders", MetricKind::Counter).unwrap(),
            id
        );
        assert!(matches!(
            r.get_or_register("orders", MetricKind::Trend),
            Err(RegistryError::KindMismatch { .. })
        ));
        assert!(r.get_or_register("bad name", MetricKind::Counter).is_err());
    }

    #[test]
    fn plugins_cannot_take_a_builtin_name_of_any_kind() {
        let r = Registry::new();
        for (name, kind) in [
            ("http_reqs", MetricKind::Counter),
            ("http_req_failed", MetricKind::Rate),
            ("http_req_duration", MetricKind::Trend),
            ("checks", MetricKind::Rate),
            ("checks", MetricKind::Counter),
        ] {
            let err = r.custom(name, kind).unwrap_err();
            assert_eq!(err, RegistryError::BuiltIn(name.into()));
            assert!(err.to_string().contains(&format!("`{name}` is a built-in")));
        }
        // mark_time leaves a built-in alone (it is no plugin's to mark).
        r.mark_time("http_reqs");
        assert!(!r.def(builtin::HTTP_REQS).is_time);
        assert!(r.custom("my_http_reqs", MetricKind::Counter).is_ok());
    }
}
