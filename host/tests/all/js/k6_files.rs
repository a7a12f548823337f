//! `k6/experimental/fs` and `k6/experimental/csv`, side by side with k6 1.1.0 on the same
//! CSV: what `stat`, `read`, `seek`, `csv.parse` (with its options) and `csv.Parser`
//! give, line for line; a file outside the script's folder is refused at build, as
//! `open()`'s is; a path that is not a literal names the line.

use crate::support as common;

use common::k6::k6_in;
use common::{host_in as host, output_text as text};

const CSV: &str = "name,age,city\nalice,30,\"Paris, FR\"\nbob,25,\"say \"\"hi\"\"\"\n\ncarol,41,Oslo\r\ndave,19,Rome\n";

const SCRIPT: &str = r#"import { open, SeekMode } from 'k6/experimental/fs';
import csv from 'k6/experimental/csv';
import fs from 'k6/experimental/fs';

const sorted = (o) => JSON.stringify(o, Object.keys(o).sort());
const file = await open('data.csv');
const all = await csv.parse(await open('data.csv'), { delimiter: ',' });
const objs = await csv.parse(await open('data.csv'), { asObjects: true });
const part = await csv.parse(await open('data.csv'), { skipFirstLine: true, fromLine: 1, toLine: 2 });
const reader = await fs.open('./data.csv');
const parser = new csv.Parser(await open('data.csv'), { skipFirstLine: true });
const objParser = new csv.Parser(await open('data.csv'), { asObjects: true, toLine: 2 });
const consumed = await open('data.csv');
const tail = await csv.parse(consumed, { fromLine: 3 });

export const options = { iterations: 1 };

export default async function () {
  console.log('STAT ' + sorted(await file.stat()));
  const buf = new Uint8Array(10);
  const n = await reader.read(buf);
  console.log('READ ' + n + ' ' + JSON.stringify(String.fromCharCode(...buf.subarray(0, n))));
  const at = await reader.seek(-5, SeekMode.End);
  const n2 = await reader.read(buf);
  console.log('SEEK ' + at + ' ' + n2 + ' ' + JSON.stringify(String.fromCharCode(...buf.subarray(0, n2))));
  // (One line: the host writes at most 10 log lines a second per VU.)
  console.log('EOF ' + (await reader.read(buf)) + ' CURRENT ' + (await reader.seek(2, SeekMode.Start)) + ' ' + (await reader.seek(3, SeekMode.Current)));
  console.log('ALL ' + all.length + ' ' + JSON.stringify(all[2]) + ' ' + JSON.stringify(all[4]));
  console.log('OBJS ' + objs.length + ' ' + sorted(objs[0]) + ' ' + sorted(objs[3]));
  console.log('PART ' + JSON.stringify(Array.from(part)));
  const rows = [];
  for (;;) { const { done, value } = await parser.next(); if (done) break; rows.push(value); }
  console.log('PARSER ' + JSON.stringify(rows));
  const objRows = [];
  for (;;) { const { done, value } = await objParser.next(); if (done) break; objRows.push(sorted(value)); }
  console.log('OBJPARSER ' + JSON.stringify(objRows));
  console.log('TAIL ' + JSON.stringify(Array.from(tail)) + ' ' + (await consumed.read(buf)));
}
"#;

/// The `PREFIX ...` lines of a run's stderr: the host's as written, k6's taken out of
/// its `msg="..."` and unescaped.
fn logged(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| {
            let at = [
                "STAT ",
                "READ ",
                "SEEK ",
                "EOF ",
                "ALL ",
                "OBJS ",
                "PART ",
                "PARSER ",
                "OBJPARSER ",
                "TAIL ",
                "LAZY ",
            ]
            .iter()
            .filter_map(|p| l.find(p))
            .min()?;
            let rest = &l[at..];
            if !l.contains("msg=\"") {
                return Some(rest.to_string());
            }
            let rest = rest.split("\" source=console").next().unwrap_or(rest);
            let mut out = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    match chars.next() {
                        Some('n') => out.push_str("\\n"),
                        Some(e) => out.push(e),
                        None => {}
                    }
                } else {
                    out.push(c);
                }
            }
            Some(out)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_and_csv_read_a_file_as_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.csv"), CSV).unwrap();
    std::fs::write(dir.path().join("files.js"), SCRIPT).unwrap();
    let out = dir.path().join("results");
    let h = host(
        dir.path(),
        ["run", "files.js", "-q", "--out", out.to_str().unwrap()],
    )
    .await;
    assert!(h.status.success(), "{}", text(&h));
    let k = k6_in(dir.path(), vec!["files.js".into(), "-q".into()]).await;
    assert!(k.status.success(), "{}", text(&k));
    let (hl, kl) = (logged(&h.stderr), logged(&k.stderr));
    assert_eq!(hl.len(), 10, "{}", text(&h));
    assert_eq!(hl, kl, "host:\n{}\nk6:\n{}", text(&h), text(&k));
    // What both gave, so that a change in both is seen too.
    assert_eq!(
        hl[0],
        format!("STAT {{\"name\":\"data.csv\",\"size\":{}}}", CSV.len())
    );
    assert!(
        hl[4].starts_with("ALL 5 [\"bob\",\"25\",\"say \\\"hi\\\"\"]"),
        "{}",
        hl[4]
    );
}

/// A Parser reads as its next() asks, as k6's: a bad record further down the file is
/// met by the next() that reaches it, after the records before it (an eager parse
/// failed in the init code, before any iteration).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_parser_reads_as_next_asks_as_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.csv"), "a,b\n1,2\n3,4\n5,6,7\n8,9\n").unwrap();
    std::fs::write(
        dir.path().join("lazy.js"),
        r#"import { open } from 'k6/experimental/fs';
import csv from 'k6/experimental/csv';
const parser = new csv.Parser(await open('bad.csv'));
export const options = { iterations: 1 };
export default async function () {
  const rows = [];
  try {
    for (;;) { const { done, value } = await parser.next(); if (done) break; rows.push(value); }
    console.log('LAZY ' + JSON.stringify(rows) + ' no error');
  } catch (e) {
    console.log('LAZY ' + JSON.stringify(rows) + ' then error');
  }
}
"#,
    )
    .unwrap();
    let h = host(dir.path(), ["run", "lazy.js", "-q"]).await;
    let k = k6_in(dir.path(), vec!["lazy.js".into(), "-q".into()]).await;
    let (hl, kl) = (logged(&h.stderr), logged(&k.stderr));
    assert_eq!(hl, kl, "host:\n{}\nk6:\n{}", text(&h), text(&k));
    assert_eq!(
        hl,
        vec!["LAZY [[\"a\",\"b\"],[\"1\",\"2\"],[\"3\",\"4\"]] then error".to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_open_outside_the_folder_or_not_literal_is_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("s")).unwrap();
    std::fs::write(dir.path().join("secret.csv"), "a\n").unwrap();
    std::fs::write(
        dir.path().join("s/out.js"),
        "import { open } from 'k6/experimental/fs';\nconst f = await open('../secret.csv');\nexport default function () {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s/var.js"),
        "import fs from 'k6/experimental/fs';\nconst p = 'x.csv';\nconst f = await fs.open(p);\nexport default function () {}\n",
    )
    .unwrap();
    let s = dir.path().join("s");
    let outside = host(&s, ["build", "out.js"]).await;
    assert!(!outside.status.success(), "{}", text(&outside));
    assert!(
        String::from_utf8_lossy(&outside.stderr).contains("outside the script's folder"),
        "{}",
        text(&outside)
    );
    let var = host(&s, ["build", "var.js"]).await;
    assert!(!var.status.success(), "{}", text(&var));
    assert!(
        String::from_utf8_lossy(&var.stderr).contains("var.js:3: fs.open() needs a literal path"),
        "{}",
        text(&var)
    );
}
