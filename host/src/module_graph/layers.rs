//! A check that the module graph written in lib.rs's doc comment is the crate's: each
//! top-level module imports only the modules its line lists, each listed module sits
//! below every module that lists it (no module imports a layer above it), and every
//! module of the crate has a line. The table is read from lib.rs itself, so a new
//! import across modules either fits the table or changes it in the same commit.

use super::{src_dir, Crate, Edges};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's line of the table: its place (0 at the top) and what it may import.
#[derive(Debug, PartialEq)]
struct Line {
    place: usize,
    imports: BTreeSet<String>,
}

/// The table of lib.rs's ```` ```text ```` block under "# Module graph": lines
/// `name → a, b, c   (comment)` (continued on indented lines), and one line
/// `a, b, c: leaves`. What is in parentheses is a comment, and may span lines.
fn read_table(lib: &str) -> BTreeMap<String, Line> {
    let doc: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let start = doc
        .iter()
        .position(|l| l.trim() == "# Module graph")
        .expect("lib.rs has a \"# Module graph\" section");
    let open = start
        + doc[start..]
            .iter()
            .position(|l| l.trim() == "```text")
            .expect("the module graph is a ```text block");
    let mut table: BTreeMap<String, Line> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut depth = 0usize; // open parentheses: a comment, possibly over lines
    for raw in &doc[open + 1..] {
        if raw.trim() == "```" {
            break;
        }
        let (names, is_leaves) = if depth == 0 && !raw.starts_with(' ') {
            if let Some((name, rest)) = raw.split_once('→') {
                let name = name.trim().to_string();
                let place = table.len();
                table.insert(
                    name.clone(),
                    Line {
                        place,
                        imports: BTreeSet::new(),
                    },
                );
                current = Some(name);
                (rest.to_string(), false)
            } else if let Some(leaves) = raw.trim().strip_suffix(": leaves") {
                (leaves.to_string(), true)
            } else {
                panic!("lib.rs's module graph: cannot read the line {raw:?}");
            }
        } else {
            (raw.to_string(), false)
        };
        let mut outside = String::new();
        for c in names.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ if depth == 0 => outside.push(c),
                _ => {}
            }
        }
        for name in outside.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if is_leaves {
                let place = table.len();
                table.entry(name.to_string()).or_insert(Line {
                    place,
                    imports: BTreeSet::new(),
                });
            } else if let Some(cur) = &current {
                table
                    .get_mut(cur)
                    .expect("the current line is in the table")
                    .imports
                    .insert(name.to_string());
            }
        }
    }
    table
}

/// The top-level module a file of `src/` belongs to (`run` for run/observe/mod.rs,
/// `signals` for signals.rs), or `None` for lib.rs.
fn top_module(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib").then_some(name)
}

/// Module → module it imports → the first import between their files that shows it.
fn module_edges(root: &Path, edges: &Edges) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, tos) in edges {
        let Some(a) = top_module(root, from) else {
            continue;
        };
        for (to, why) in tos {
            let Some(b) = top_module(root, to) else {
                continue;
            };
            if a != b {
                let shown = format!(
                    "{} uses {why}",
                    from.strip_prefix(root).unwrap_or(from).display()
                );
                out.entry(a.clone()).or_default().entry(b).or_insert(shown);
            }
        }
    }
    out
}

/// What is wrong with `table` for the crate's module edges and modules, one line each.
fn mismatches(
    table: &BTreeMap<String, Line>,
    edges: &BTreeMap<String, BTreeMap<String, String>>,
    modules: &BTreeSet<String>,
) -> Vec<String> {
    let mut wrong = Vec::new();
    for m in modules {
        if !table.contains_key(m) {
            wrong.push(format!("module `{m}` has no line in lib.rs's module graph"));
        }
    }
    for (name, line) in table {
        if !modules.contains(name) {
            wrong.push(format!(
                "lib.rs's module graph names `{name}`, which is no module"
            ));
        }
        for dep in &line.imports {
            match table.get(dep) {
                None => wrong.push(format!("`{name}` → `{dep}`: `{dep}` has no line")),
                Some(d) if d.place <= line.place => wrong.push(format!(
                    "`{name}` → `{dep}`: `{dep}` is listed above `{name}`, not below it"
                )),
                Some(_) => {}
            }
        }
    }
    for (from, tos) in edges {
        let allowed = table.get(from).map(|l| &l.imports);
        for (to, why) in tos {
            if !allowed.is_some_and(|a| a.contains(to)) {
                wrong.push(format!(
                    "`{from}` imports `{to}` ({why}), which its line does not list"
                ));
            }
        }
    }
    wrong
}

/// The crate's top-level modules that run outside tests (`mod x;` in lib.rs, less the
/// test-only ones).
fn crate_modules(krate: &Crate, root: &Path) -> BTreeSet<String> {
    krate.modules[0]
        .children
        .values()
        .filter_map(|&c| top_module(root, &krate.modules[c].file))
        .collect()
}

#[test]
fn the_module_graph_in_lib_rs_is_the_crates() {
    let root = src_dir();
    let lib = std::fs::read_to_string(root.join("lib.rs")).expect("lib.rs");
    let table = read_table(&lib);
    let krate = Crate::read(&root);
    let edges = module_edges(&root, &krate.edges());
    let wrong = mismatches(&table, &edges, &crate_modules(&krate, &root));
    let actual: Vec<String> = edges
        .iter()
        .map(|(m, tos)| {
            format!(
                "{m} → {}",
                tos.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "lib.rs's module graph and the code disagree (fix the import, or the table if the \
         layering is meant):\n  {}\nwhat the code imports:\n  {}",
        wrong.join("\n  "),
        actual.join("\n  ")
    );
}

#[test]
fn the_table_is_read_with_its_comments_and_leaves() {
    let lib = "//! # Module graph\n//!\n//! ```text\n\
               //! cli  → run, net   (the command line,\n\
               //!        which calls run)\n\
               //! run  → net,\n//!        metrics\n\
               //! net, metrics: leaves\n//! ```\n";
    let table = read_table(lib);
    let names = |l: &Line| l.imports.iter().cloned().collect::<Vec<_>>();
    assert_eq!(names(&table["cli"]), ["net", "run"]);
    assert_eq!(names(&table["run"]), ["metrics", "net"]);
    assert!(table["net"].imports.is_empty() && table["net"].place > table["run"].place);
    let p = |s: &str| PathBuf::from(s);
    let mut edges = BTreeMap::new();
    edges.insert(
        "net".to_string(),
        BTreeMap::from([("run".to_string(), "net/a.rs uses crate::run::x".to_string())]),
    );
    let modules: BTreeSet<String> = ["cli", "run", "net", "metrics", "extra"]
        .map(String::from)
        .into();
    let wrong = mismatches(&table, &edges, &modules);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong[0].contains("`extra` has no line"), "{wrong:?}");
    assert!(wrong[1].contains("`net` imports `run`"), "{wrong:?}");
    assert_eq!(
        top_module(&p("src"), &p("src/run/observe/mod.rs")).as_deref(),
        Some("run")
    );
    assert_eq!(
        top_module(&p("src"), &p("src/signals.rs")).as_deref(),
        Some("signals")
    );
    assert_eq!(top_module(&p("src"), &p("src/lib.rs")), None);
}
