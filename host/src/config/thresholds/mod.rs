//! `[thresholds]` in k6's syntax, read with the rest of the config so that its
//! mistakes are reported with the others: metric keys (`http_req_duration{name:x}`),
//! expressions (`p(95)<500`) and errors that point at the character at fault. Judging
//! them against a run's metrics is the job of the `thresholds` module above.

pub(crate) mod expression;
pub(crate) mod metric_key;
pub(crate) mod parse;
pub(crate) mod syntax_error;

pub(crate) use parse::parse_thresholds;
