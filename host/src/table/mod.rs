//! Typed reading of TOML tables with errors that say what to fix: unknown keys get the
//! nearest known name suggested, wrong types name the expected type. Below the run
//! config that reads `run.toml` with it and the thresholds that parse `[thresholds]`
//! with it.

use crate::duration::parse_duration;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A config error: where it is (`scenarios.browse.vus`) and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    /// Dotted path of the offending key.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Every mistake found in a config, in the order the sections are read, so that one
/// attempt shows them all instead of one per run.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl ConfigErrors {
    /// The mistakes, each naming its key.
    pub fn errors(&self) -> &[ConfigError] {
        &self.0
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self(vec![e])
    }
}

impl std::fmt::Display for ConfigErrors {
    /// One mistake on the line; several as a count, then one indented line each.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                write!(f, "{} mistakes; fix each of them:", many.len())?;
                for e in many {
                    write!(f, "\n  - {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ConfigErrors {}

/// Parses TOML text, pointing at the line of a syntax error.
pub fn parse_toml(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError {
        path: origin.to_string(),
        message: format!("not valid TOML: {}", e.to_string().trim_end()),
    })
}

/// A number must be finite and not negative, wherever it was written (a table, or a
/// flag such as `--rate`); `path` names its key.
pub(crate) fn check_non_negative(path: &str, value: f64) -> Result<f64, ConfigError> {
    if !value.is_finite() || value < 0.0 {
        return Err(ConfigError {
            path: path.to_string(),
            message: format!("must be a non-negative number, got {value}"),
        });
    }
    Ok(value)
}

/// Gathers config errors so a reader can go on to the next section after a mistake.
#[derive(Debug, Default)]
pub(crate) struct Collector(Vec<ConfigError>);

impl Collector {
    /// The value of `result`, or `None` with its error (or errors) kept.
    pub(crate) fn keep<T, E: Into<ConfigErrors>>(&mut self, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.extend(e.into().0);
                None
            }
        }
    }

    /// The value of `result`, or `None` with all its errors kept.
    pub(crate) fn keep_all<T>(&mut self, result: Result<T, ConfigErrors>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.extend(e.0);
                None
            }
        }
    }

    /// Keeps an error.
    pub(crate) fn push(&mut self, e: ConfigError) {
        self.0.push(e);
    }

    /// The value of `result`, or `None` with its error kept: for the optional keys of
    /// a table that is read to its end whatever it holds.
    pub(crate) fn opt<T>(&mut self, result: Result<Option<T>, ConfigError>) -> Option<T> {
        self.keep(result).flatten()
    }

    /// Whether nothing was kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(())` when nothing was kept, else every error kept.
    pub(crate) fn finish(self) -> Result<(), ConfigErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors(self.0))
        }
    }
}

/// Reads keys out of a table and remembers which ones were read, so the leftovers can be
/// reported as unknown.
pub(crate) struct TableReader<'a> {
    path: String,
    table: &'a toml::Table,
    read: BTreeSet<&'static str>,
    /// Required keys found absent: a key left unread that is one typo away from one of
    /// them is named in its stead ([`TableReader::finish_into`]).
    missing: BTreeSet<&'static str>,
}

impl<'a> TableReader<'a> {
    /// Starts reading `table`, found at the dotted `path`.
    pub(crate) fn new(path: impl Into<String>, table: &'a toml::Table) -> Self {
        Self {
            path: path.into(),
            table,
            read: BTreeSet::new(),
            missing: BTreeSet::new(),
        }
    }

    /// Marks `keys` as known without reading them: when a table's kind could not be
    /// told (a scenario without a valid executor), its other keys are not reported
    /// as unknown, except those that are no known key at all.
    pub(crate) fn known(&mut self, keys: &[&'static str]) {
        self.read.extend(keys.iter().copied());
    }

    /// The error of a required `key` that is absent ("missing; {hint}"). If the
    /// table holds an unread key one typo away from it, [`TableReader::finish_into`]
    /// reports that key instead, since that is what the user wrote.
    pub(crate) fn missing(&mut self, key: &'static str, hint: &str) -> ConfigError {
        self.read.insert(key);
        self.missing.insert(key);
        self.error(key, format!("missing; {hint}"))
    }

    /// A required key: `read` is the typed reader (`TableReader::uint`, ...), an
    /// absent key is [`TableReader::missing`].
    pub(crate) fn required<T>(
        &mut self,
        key: &'static str,
        hint: &str,
        read: impl FnOnce(&mut Self, &'static str) -> Result<Option<T>, ConfigError>,
    ) -> Result<T, ConfigError> {
        match read(self, key)? {
            Some(value) => Ok(value),
            None => Err(self.missing(key, hint)),
        }
    }

    /// An error about `key` of this table.
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: join(&self.path, key),
            message: message.into(),
        }
    }

    /// The dotted path of `key` in this table, for the reader of a table inside it.
    pub(crate) fn path_of(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn get(&mut self, key: &'static str) -> Option<&'a toml::Value> {
        self.read.insert(key);
        self.table.get(key)
    }

    /// An optional string.
    pub(crate) fn string(&mut self, key: &'static str) -> Result<Option<String>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.error(key, expected("a string", other))),
        }
    }

    /// An optional non-negative integer.
    pub(crate) fn uint(&mut self, key: &'static str) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(toml::Value::Integer(i)) => {
                Err(self.error(key, format!("must not be negative, got {i}")))
            }
            Some(other) => Err(self.error(key, expected("a whole number", other))),
        }
    }

    /// An optional non-negative integer within `range`; one outside it is refused with
    /// the range and the value given.
    pub(crate) fn uint_in(
        &mut self,
        key: &'static str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(n) = self.uint(key)? else {
            return Ok(None);
        };
        if range.contains(&n) {
            return Ok(Some(n));
        }
        let (low, high) = (range.start(), range.end());
        Err(self.error(
            key,
            if *low == 0 {
                format!("must be at most {high}, got {n}")
            } else {
                format!("must be between {low} and {high}, got {n}")
            },
        ))
    }

    /// An optional number (integer or float), finite and non-negative.
    pub(crate) fn number(&mut self, key: &'static str) -> Result<Option<f64>, ConfigError> {
        let value = match self.get(key) {
            None => return Ok(None),
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => return Err(self.error(key, expected("a number", other))),
        };
        check_non_negative(&self.path_of(key), value).map(Some)
    }

    /// An optional boolean.
    pub(crate) fn boolean(&mut self, key: &'static str) -> Result<Option<bool>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(self.error(key, expected("true or false", other))),
        }
    }

    /// An optional duration written as a string (`"30s"`).
    pub(crate) fn duration(&mut self, key: &'static str) -> Result<Option<Duration>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => parse_duration(s)
                .map(Some)
                .map_err(|e| self.error(key, e.to_string())),
            Some(other) => Err(self.error(
                key,
                format!(
                    "{} (durations are strings such as \"30s\")",
                    expected("a duration", other)
                ),
            )),
        }
    }

    /// An optional size in bytes: a whole number of bytes, or a string with a unit
    /// (`"1MiB"`, `"512KiB"`, `"2MB"`).
    pub(crate) fn size(&mut self, key: &'static str) -> Result<Option<u64>, ConfigError> {
        const HINT: &str = "sizes are a number of bytes or a string such as \"1MiB\" or \"512KiB\"";
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(toml::Value::String(s)) => s
                .trim()
                .parse::<bytesize::ByteSize>()
                .map(|b| Some(b.as_u64()))
                .map_err(|_| self.error(key, format!("{s:?} is not a size; {HINT}"))),
            Some(other) => Err(self.error(key, format!("{} ({HINT})", expected("a size", other)))),
        }
    }

    /// An optional array of tables.
    pub(crate) fn tables(
        &mut self,
        key: &'static str,
    ) -> Result<Option<Vec<&'a toml::Table>>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    item.as_table().ok_or_else(|| {
                        self.error(&format!("{key}[{i}]"), expected("a table", item))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.error(key, expected("an array of tables", other))),
        }
    }

    /// An optional table of string values (`env`, `tags`); numbers and booleans are
    /// accepted and turned into text.
    pub(crate) fn string_map(
        &mut self,
        key: &'static str,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        match self.get(key) {
            None => Ok(BTreeMap::new()),
            Some(toml::Value::Table(t)) => string_map(&join(&self.path, key), t),
            Some(other) => Err(self.error(key, expected("a table", other))),
        }
    }

    /// Fails on the first key that was never read, suggesting the nearest known one
    /// (for the sections read up to their first mistake; a scenario's table is read to
    /// its end with [`TableReader::finish_into`]).
    pub(crate) fn finish(self) -> Result<(), ConfigError> {
        let mut errors = Collector::default();
        self.finish_into(&mut errors);
        match errors.0.into_iter().next() {
            Some(first) => Err(first),
            None => Ok(()),
        }
    }

    /// Adds to `errors` every key that was never read, each with the nearest known
    /// name suggested. A key one typo away from a required key found absent replaces
    /// that key's "missing" error: `duraton` was written, so `duraton` is named.
    pub(crate) fn finish_into(self, errors: &mut Collector) {
        #[cfg(test)]
        asked::record(&self.path, &self.read);
        let known: Vec<&str> = self.read.iter().copied().collect();
        for key in self.table.keys() {
            if self.read.contains(key.as_str()) {
                continue;
            }
            match nearest(key, &known) {
                Some(best) if self.missing.contains(best) => {
                    let superseded = join(&self.path, best);
                    errors.0.retain(|e| e.path != superseded);
                    errors.push(self.error(
                        key,
                        format!(
                            "unknown option `{key}`; did you mean `{best}`? (`{best}` is \
                             required and is not set)"
                        ),
                    ));
                }
                _ => errors.push(self.error(key, unknown_message("option", key, &known))),
            }
        }
    }
}

/// What each reader knew of its table when it finished, recorded while a test asks
/// ([`asked::during`]): the config schema's test compares it with the schema's keys.
#[cfg(test)]
pub(crate) mod asked {
    use std::cell::RefCell;
    use std::collections::{BTreeMap, BTreeSet};

    thread_local! {
        static ASKED: RefCell<Option<BTreeMap<String, BTreeSet<String>>>> =
            const { RefCell::new(None) };
    }

    /// Notes that the reader of the table at `path` knew `keys`.
    pub(crate) fn record(path: &str, keys: &BTreeSet<&'static str>) {
        ASKED.with(|a| {
            if let Some(asked) = a.borrow_mut().as_mut() {
                let known = asked.entry(path.to_string()).or_default();
                known.extend(keys.iter().map(|k| k.to_string()));
            }
        });
    }

    /// Runs `f` and returns, by table path, the keys the readers it ran knew.
    pub(crate) fn during(f: impl FnOnce()) -> BTreeMap<String, BTreeSet<String>> {
        ASKED.with(|a| *a.borrow_mut() = Some(BTreeMap::new()));
        f();
        ASKED.with(|a| a.borrow_mut().take().unwrap_or_default())
    }
}

/// Reads a table whose values must be strings (numbers and booleans are turned into text).
pub(crate) fn string_map(
    path: &str,
    table: &toml::Table,
) -> Result<BTreeMap<String, String>, ConfigError> {
    table
        .iter()
        .map(|(k, v)| {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(ConfigError {
                        path: join(path, k),
                        message: expected("a string", other),
                    })
                }
            };
            Ok((k.clone(), text))
        })
        .collect()
}

/// "unknown option `vu`; did you mean `vus`?" or a list of the known names.
pub(crate) fn unknown_message(what: &str, given: &str, known: &[&str]) -> String {
    match nearest(given, known) {
        Some(best) => format!("unknown {what} `{given}`; did you mean `{best}`?"),
        None => format!(
            "unknown {what} `{given}`; expected one of: {}",
            known.join(", ")
        ),
    }
}

/// The known name closest to `given`, if it is close enough to be a likely typo.
pub(crate) fn nearest<'k>(given: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(given, k), *k))
        .filter(|(distance, k)| *distance <= (k.len() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

fn expected(what: &str, got: &toml::Value) -> String {
    format!("expected {what}, got {} `{got}`", got.type_str())
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A count as TOML writes it (a signed 64-bit integer).
pub(crate) fn whole(path: &str, n: u64) -> Result<toml::Value, ConfigError> {
    i64::try_from(n)
        .map(toml::Value::Integer)
        .map_err(|_| ConfigError {
            path: path.to_string(),
            message: format!("must be at most {}, got {n}", i64::MAX),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_nearest_name() {
        assert_eq!(nearest("vu", &["vus", "duration"]), Some("vus"));
        assert_eq!(nearest("duratoin", &["vus", "duration"]), Some("duration"));
        assert_eq!(nearest("zzzzzzzz", &["vus", "duration"]), None);
    }

    #[test]
    fn unknown_keys_are_reported() {
        let table: toml::Table = toml::from_str("vus = 1\nduraton = \"1s\"").unwrap();
        let mut reader = TableReader::new("scenarios.a", &table);
        reader.uint("vus").unwrap();
        reader.duration("duration").unwrap();
        let err = reader.finish().unwrap_err();
        assert_eq!(err.path, "scenarios.a.duraton");
        assert!(err.message.contains("did you mean `duration`"), "{err}");
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        let table: toml::Table = toml::from_str("vus = \"ten\"\nduration = 10").unwrap();
        let mut reader = TableReader::new("s", &table);
        assert!(reader
            .uint("vus")
            .unwrap_err()
            .message
            .contains("whole number"));
        assert!(reader
            .duration("duration")
            .unwrap_err()
            .message
            .contains("\"30s\""));
    }
}
