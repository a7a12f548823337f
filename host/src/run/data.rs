//! Shared data sets (`[data]`): each file is read once before the run and handed to the
//! plugin record by record as JSON text. A `.csv` file is RFC 4180 CSV with a header
//! row (the `csv` crate: quoted fields may hold commas, quotes and line breaks); any
//! `.proto` file is one record, its text as a JSON string (for gRPC channels: the
//! plugin cannot read files itself); any other file is a JSON array.

use crate::plugin::state::DataSets;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Reads every data set named in `[data]`.
pub(crate) fn load(files: &BTreeMap<String, PathBuf>) -> Result<DataSets> {
    let mut sets = DataSets::new();
    for (name, path) in files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("[data] {name}: cannot read {}", path.display()))?;
        let extension = |ext: &str| {
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case(ext))
        };
        let records = if extension("proto") {
            vec![serde_json::Value::String(text).to_string()]
        } else if extension("csv") {
            csv_records(&text)
                .map_err(|e| anyhow::anyhow!("[data] {name}: {}: {e}", path.display()))?
        } else {
            let value: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("[data] {name}: {} is not valid JSON", path.display()))?;
            match value {
                serde_json::Value::Array(items) => items.iter().map(|v| v.to_string()).collect(),
                _ => bail!("[data] {name}: {} must hold a JSON array", path.display()),
            }
        };
        sets.insert(name.clone(), records);
    }
    Ok(sets)
}

/// Why a CSV data set is refused; each message names the line and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CsvError {
    /// No header row (an empty file, or empty names).
    #[error("the first line must be a header row naming the columns")]
    NoHeader,
    /// A column named twice: the keys of a record would clash.
    #[error("the header names column `{0}` twice")]
    DuplicateColumn(String),
    /// A row whose field count differs from the header's.
    #[error(
        "line {line} has {len} field{} but the header has {expected}; quote a value \
         that holds a comma (\"Paris, France\") and give every row every column",
        if *.len == 1 { "" } else { "s" }
    )]
    Ragged {
        /// The row's line (from 1).
        line: u64,
        /// Its number of fields.
        len: u64,
        /// The header's.
        expected: u64,
    },
    /// Bytes that are not UTF-8.
    #[error("line {0} is not valid UTF-8; save the file as UTF-8")]
    NotUtf8(u64),
    /// Anything else the CSV reader refuses, with its line when it knows it.
    #[error("{}{reason}", .line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Other {
        /// The line, when known.
        line: Option<u64>,
        /// The reader's message.
        reason: String,
    },
}

/// CSV with a header row → one JSON object per row, the header's names as keys and
/// every value a string. A row with more or fewer fields than the header is an error
/// naming its line, rather than a record that silently lacks keys or loses values.
pub(crate) fn csv_records(text: &str) -> Result<Vec<String>, CsvError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        // Header names are keys the plugin looks up: `name, city` means `city`.
        .trim(csv::Trim::Headers)
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(describe)?
        .iter()
        .map(str::to_owned)
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(CsvError::NoHeader);
    }
    if let Some(dup) = header
        .iter()
        .enumerate()
        .find_map(|(i, h)| header[..i].contains(h).then_some(h))
    {
        return Err(CsvError::DuplicateColumn(dup.clone()));
    }
    let mut records = Vec::new();
    for row in reader.records() {
        let row = row.map_err(describe)?;
        let object: serde_json::Map<String, serde_json::Value> = header
            .iter()
            .zip(row.iter())
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.to_owned())))
            .collect();
        records.push(serde_json::Value::Object(object).to_string());
    }
    Ok(records)
}

fn describe(e: csv::Error) -> CsvError {
    let line = e.position().map(|p| p.line());
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => CsvError::Ragged {
            line: line.unwrap_or(0),
            len: *len,
            expected: *expected_len,
        },
        csv::ErrorKind::Utf8 { .. } => CsvError::NotUtf8(line.unwrap_or(0)),
        _ => CsvError::Other {
            line,
            reason: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<serde_json::Value> {
        csv_records(text)
            .unwrap()
            .iter()
            .map(|r| serde_json::from_str(r).unwrap())
            .collect()
    }

    #[test]
    fn quoted_fields_keep_commas_quotes_and_line_breaks() {
        let rows = parsed(
            "name, city\nalice,\"Paris, France\"\nbob,\"say \"\"hi\"\"\"\ncarol,\"two\nlines\"\n",
        );
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0]["name"], "alice");
        assert_eq!(rows[0]["city"], "Paris, France");
        assert_eq!(rows[1]["city"], "say \"hi\"");
        assert_eq!(rows[2]["city"], "two\nlines");
    }

    #[test]
    fn a_ragged_row_is_an_error_naming_its_line() {
        let err = csv_records("name,city\nalice,Paris\nbob,Lyon,extra\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 3 has 3 fields but the header has 2; quote a value that holds a comma \
             (\"Paris, France\") and give every row every column"
        );
        let err = csv_records("name,city\nalice\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("line 2 has 1 field but the header has 2"),
            "{err}"
        );
        // A line break inside quotes does not shift the count.
        let err = csv_records("a,b\n1,\"x\ny\"\n2\n").unwrap_err();
        assert!(
            matches!(
                err,
                CsvError::Ragged {
                    line: 4,
                    len: 1,
                    expected: 2
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn header_mistakes_are_named() {
        assert_eq!(
            csv_records("a,a\n1,2\n").unwrap_err().to_string(),
            "the header names column `a` twice"
        );
        assert_eq!(csv_records("").unwrap_err(), CsvError::NoHeader);
    }
}
