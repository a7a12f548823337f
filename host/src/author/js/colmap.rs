//! Columns of a rewritten module back to the file's. The build rewrites each module on
//! its own lines (async functions, `throw`, imports and exports), so a line keeps its
//! number but the text before a rewrite on it moves the columns after. Each rewrite
//! hands back its edits ([`Stage`]); [`anchors`] composes them into, for each line a
//! rewrite touched, the points where the column shift changes, which the layer's stack
//! mapping reads (layer/bundle.js `BUNDLE.cols`) before it looks a column up in the
//! file's own source map, if it has one. A minified bundle is one long line, where
//! every import rewritten at its start moved every column of the code.

use std::collections::BTreeMap;

/// The edits of one rewrite, in the order they were applied: (byte offset in its
/// input, bytes replaced there, bytes written instead).
#[derive(Debug, Default, Clone)]
pub(crate) struct Stage(pub Vec<(usize, usize, usize)>);

impl Stage {
    /// Where the output's byte `out` came from in the input (inside a replacement: the
    /// replaced text's start).
    fn back(&self, out: usize) -> usize {
        let mut delta: isize = 0;
        for &(at, len, new) in &self.0 {
            let start = (at as isize + delta) as usize;
            if out < start {
                break;
            }
            if out < start + new {
                return at;
            }
            delta += new as isize - len as isize;
        }
        (out as isize - delta).max(0) as usize
    }

    /// Where the input's byte `inp` went in the output (inside a replaced text: the
    /// replacement's start).
    fn forward(&self, inp: usize) -> usize {
        let mut delta: isize = 0;
        for &(at, len, new) in &self.0 {
            if inp < at {
                break;
            }
            if inp < at + len {
                return (at as isize + delta) as usize;
            }
            delta += new as isize - len as isize;
        }
        (inp as isize + delta) as usize
    }

    /// The output offsets at which this stage's edits start and end.
    fn boundaries(&self) -> Vec<usize> {
        let mut delta: isize = 0;
        let mut out = Vec::with_capacity(self.0.len() * 2);
        for &(at, len, new) in &self.0 {
            let start = (at as isize + delta) as usize;
            out.push(start);
            out.push(start + new);
            delta += new as isize - len as isize;
        }
        out
    }
}

/// One anchor: from column `f` of the rewritten line on, columns map to `o + (c - f)`
/// (kept below the next anchor's), or all to `o` when `fixed` (text a rewrite wrote).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Anchor {
    /// The column in the rewritten line (0-based bytes).
    pub f: usize,
    /// The column in the file's line.
    pub o: usize,
    /// Whether the columns from `f` to the next anchor are text a rewrite wrote.
    pub fixed: bool,
}

/// For each line (1-based) of `last` on which a column differs from `first`'s, its
/// anchors in order (see [`Anchor`]). `stages` turned `first` into `last`, in order.
pub(crate) fn anchors(first: &str, last: &str, stages: &[Stage]) -> BTreeMap<usize, Vec<Anchor>> {
    let mut points: Vec<usize> = Vec::new();
    for (k, stage) in stages.iter().enumerate() {
        for b in stage.boundaries() {
            let mut p = b;
            for later in &stages[k + 1..] {
                p = later.forward(p);
            }
            points.push(p);
        }
    }
    points.sort_unstable();
    points.dedup();
    let first_lines = line_starts(first);
    let last_lines = line_starts(last);
    let back = |p: usize| {
        let mut o = p;
        for stage in stages.iter().rev() {
            o = stage.back(o);
        }
        o.min(first.len())
    };
    let mut out: BTreeMap<usize, Vec<Anchor>> = BTreeMap::new();
    for (k, &p) in points.iter().enumerate() {
        if p > last.len() {
            continue;
        }
        let o = back(p);
        // Written by a rewrite when the next byte maps to the same place too.
        let fixed = points.get(k + 1).is_some_and(|&n| n > p + 1) && back(p + 1) == o;
        let (line, col) = position(&last_lines, p);
        let (oline, ocol) = position(&first_lines, o);
        // A rewrite keeps every line on its line; a point whose origin is on another
        // (inside a replaced import that spanned lines) maps to that line's start.
        let ocol = if oline == line { ocol } else { 0 };
        out.entry(line).or_default().push(Anchor {
            f: col,
            o: ocol,
            fixed,
        });
    }
    out.retain(|_, list| {
        list.dedup();
        list.iter().any(|a| a.f != a.o || a.fixed)
    });
    out
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// (1-based line, 0-based byte column) of `offset`.
fn position(starts: &[usize], offset: usize) -> (usize, usize) {
    let line = starts.partition_point(|&s| s <= offset);
    (line, offset - starts[line - 1])
}

/// The column of `first` that column `col` of line `line` of `last` stands for.
/// As layer/bundle.js's `movedColumn` reads the anchors.
#[cfg(test)]
fn lookup(map: &BTreeMap<usize, Vec<Anchor>>, line: usize, col: usize) -> usize {
    let Some(list) = map.get(&line) else {
        return col;
    };
    let i = list.partition_point(|a| a.f <= col);
    if i == 0 {
        return col;
    }
    let a = list[i - 1];
    if a.fixed {
        return a.o;
    }
    let mapped = a.o + (col - a.f);
    match list.get(i) {
        Some(next) => mapped.min(next.o),
        None => mapped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `edits` (offset, replaced, text) to `src` as a rewrite does.
    fn apply(src: &str, edits: &[(usize, usize, &str)]) -> (String, Stage) {
        let mut out = String::new();
        let mut from = 0;
        for (at, len, text) in edits {
            out.push_str(&src[from..*at]);
            out.push_str(text);
            from = at + len;
        }
        out.push_str(&src[from..]);
        let stage = Stage(edits.iter().map(|(a, l, t)| (*a, *l, t.len())).collect());
        (out, stage)
    }

    #[test]
    fn columns_after_rewrites_map_back_through_every_stage() {
        let src = "import*as e from\"k6/http\";function f(){throw'x'}export{f as default};";
        // First stage: the throw wrapped, as the build wraps it.
        let (one, s1) = super::super::throws::rewrite(src).unwrap();
        // Second stage: the import and export rewritten.
        let imp_end = one.find(';').unwrap() + 1;
        let exp = one.find("export").unwrap();
        let (two, s2) = apply(
            &one,
            &[
                (
                    0,
                    imp_end,
                    "const __m1 = __require(\"k6/http\"); const e = __m1;",
                ),
                (exp, one.len() - exp, ""),
            ],
        );
        let map = anchors(src, &two, &[s1, s2]);
        // `function` and `throw` of the last text are where they were in the first.
        for word in ["function", "throw", "'x'"] {
            let col = two.find(word).unwrap();
            assert_eq!(
                lookup(&map, 1, col),
                src.find(word).unwrap(),
                "{word}: {map:?}"
            );
        }
        // Inside the rewritten import, or the call written after `throw`: their start.
        assert_eq!(lookup(&map, 1, 10), 0);
        let call = two.find("__k6throw").unwrap();
        assert_eq!(lookup(&map, 1, call), src.find("throw").unwrap());
    }

    #[test]
    fn lines_no_rewrite_touched_have_no_anchors() {
        let src = "a();\nimport x from './x.js';\nb();\n";
        let at = src.find("import").unwrap();
        let end = src.find("b()").unwrap() - 1;
        let (out, s) = apply(src, &[(at, end - at, "const x = 1;")]);
        let map = anchors(src, &out, &[s]);
        assert!(!map.contains_key(&1) && !map.contains_key(&3), "{map:?}");
    }
}
