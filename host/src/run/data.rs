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

/// CSV with a header row → one JSON object per row, the header's names as keys and
/// every value a string. A row with more or fewer fields than the header is an error
/// naming its line, rather than a record that silently lacks keys or loses values.
pub(crate) fn csv_records(text: &str) -> Result<Vec<String>, String> {
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
        return Err("the first line must be a header row naming the columns".into());
    }
    if let Some(dup) = header
        .iter()
        .enumerate()
        .find_map(|(i, h)| header[..i].contains(h).then_some(h))
    {
        return Err(format!("the header names column `{dup}` twice"));
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

fn describe(e: csv::Error) -> String {
    let line = e.position().map(|p| p.line());
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "line {} has {len} field{} but the header has {expected_len}; quote a value \
             that holds a comma (\"Paris, France\") and give every row every column",
            line.unwrap_or(0),
            if *len == 1 { "" } else { "s" },
        ),
        csv::ErrorKind::Utf8 { .. } => format!(
            "line {} is not valid UTF-8; save the file as UTF-8",
            line.unwrap_or(0)
        ),
        _ => match line {
            Some(line) => format!("line {line}: {e}"),
            None => e.to_string(),
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
        assert!(
            err.contains("line 3 has 3 fields but the header has 2"),
            "{err}"
        );
        let err = csv_records("name,city\nalice\n").unwrap_err();
        assert!(
            err.contains("line 2 has 1 field but the header has 2"),
            "{err}"
        );
        // A line break inside quotes does not shift the count.
        let err = csv_records("a,b\n1,\"x\ny\"\n2\n").unwrap_err();
        assert!(err.contains("line 4"), "{err}");
    }

    #[test]
    fn header_mistakes_are_named() {
        assert!(csv_records("a,a\n1,2\n").unwrap_err().contains("`a` twice"));
        assert!(csv_records("").unwrap_err().contains("header row"));
    }
}
