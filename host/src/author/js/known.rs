//! The k6 modules a script may import: those the layer provides, with the names each
//! exports (a name the layer lacks is refused at build with its line), and those
//! refused outright, with the reason the user is given. One table, read by the bundler.

/// The k6 modules the layer provides, with the names each exports.
pub(crate) const MODULES: &[(&str, &[&str])] = &[
    ("k6", &["check", "group", "sleep", "fail", "randomSeed"]),
    (
        "k6/http",
        &[
            "request",
            "asyncRequest",
            "get",
            "head",
            "post",
            "put",
            "patch",
            "del",
            "options",
            "batch",
            "expectedStatuses",
            "setResponseCallback",
            "cookieJar",
            "CookieJar",
            "url",
            "file",
            "FileData",
        ],
    ),
    ("k6/metrics", &["Counter", "Gauge", "Rate", "Trend"]),
    ("k6/execution", &[]),
    ("k6/data", &["SharedArray"]),
    ("k6/html", &["parseHTML"]),
    ("k6/encoding", &["b64encode", "b64decode"]),
    (
        "k6/crypto",
        &[
            "createHash",
            "createHMAC",
            "hmac",
            "randomBytes",
            "md4",
            "md5",
            "sha1",
            "sha256",
            "sha384",
            "sha512",
            "sha512_224",
            "sha512_256",
            "ripemd160",
        ],
    ),
    (
        "k6/net/grpc",
        &[
            "Client",
            "Stream",
            "StatusOK",
            "StatusCanceled",
            "StatusUnknown",
            "StatusInvalidArgument",
            "StatusDeadlineExceeded",
            "StatusNotFound",
            "StatusAlreadyExists",
            "StatusPermissionDenied",
            "StatusResourceExhausted",
            "StatusFailedPrecondition",
            "StatusAborted",
            "StatusOutOfRange",
            "StatusUnimplemented",
            "StatusInternal",
            "StatusUnavailable",
            "StatusDataLoss",
            "StatusUnauthenticated",
            "HealthCheckUnknown",
            "HealthCheckServing",
            "HealthCheckNotServing",
            "HealthCheckServiceUnknown",
            // k6 registers the constant under this misspelt name.
            "HealthCheckServiceUnkown",
        ],
    ),
    // k6's Redis client (xk6-redis), under k6 1.x's name and k6 2.x's extension name.
    ("k6/experimental/redis", &["Client"]),
    ("k6/x/redis", &["Client"]),
    // k6's secrets, from the run's --secret-source.
    ("k6/secrets", &["get", "source"]),
    // Files bundled at build time (`fs.open` literals), and CSV over them.
    ("k6/experimental/fs", &["open", "SeekMode"]),
    ("k6/experimental/csv", &["parse", "Parser"]),
    (
        "k6/experimental/streams",
        &[
            "ReadableStream",
            "ReadableStreamDefaultReader",
            "CountQueuingStrategy",
            "ByteLengthQueuingStrategy",
        ],
    ),
    // k6's browser module over the contract's `browser` (the host drives Chromium).
    ("k6/browser", &["browser"]),
    // k6's summary helpers (jslib's k6-summary), built into the layer: nearly every
    // `handleSummary` imports them by URL.
    (K6_SUMMARY, &["textSummary", "jUnit"]),
];

/// The layer's name for jslib's k6-summary module.
pub(crate) const K6_SUMMARY: &str = "k6-summary";

/// Whether `spec` is jslib's k6-summary module (any version), which the layer carries:
/// `https://jslib.k6.io/k6-summary/0.0.2/index.js`.
pub(crate) fn is_k6_summary(spec: &str) -> bool {
    spec.strip_prefix("https://jslib.k6.io/k6-summary/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(version, file)| {
            file == "index.js" && version.split('.').all(|p| p.parse::<u32>().is_ok())
        })
}

/// The WebSocket modules (k6/ws; the WebSocket class) and the timers beside them.
const SOCKET_MODULES: &[(&str, &[&str])] = &[
    ("k6/ws", &["connect"]),
    ("k6/experimental/websockets", &["WebSocket"]),
    ("k6/websockets", &["WebSocket"]),
    (
        "k6/timers",
        &["setTimeout", "setInterval", "clearTimeout", "clearInterval"],
    ),
];

/// The k6 module `spec` with the names it exports, if the layer provides it.
pub(crate) fn known_module(spec: &str) -> Option<&'static (&'static str, &'static [&'static str])> {
    MODULES
        .iter()
        .chain(SOCKET_MODULES)
        .find(|(m, _)| *m == spec)
}

/// Every k6 module name the layer provides (for the layer's table checks).
#[cfg(test)]
pub(crate) fn all_module_names() -> impl Iterator<Item = &'static str> {
    MODULES.iter().chain(SOCKET_MODULES).map(|(m, _)| *m)
}

/// k6 modules refused, with the reason given to the user.
pub(crate) const REFUSED: &[(&str, &str)] = &[(
    "k6/experimental/browser",
    "k6 removed it in 1.0: import { browser } from 'k6/browser'",
)];
