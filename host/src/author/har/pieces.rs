//! Text cut where correlated values occur, for the script writers (Rust, Python,
//! JavaScript) to spell each piece in their language.

/// `s` cut into literal text (`false`) and variables (`true`) where a correlated
/// value occurs; `subs` (value, variable) longest value first.
pub(crate) fn pieces(s: &str, subs: &[(String, String)]) -> Vec<(bool, String)> {
    let mut pieces: Vec<(bool, String)> = vec![(false, s.to_string())];
    for (value, var) in subs {
        let mut next = Vec::new();
        for (is_var, p) in pieces {
            if is_var {
                next.push((true, p));
                continue;
            }
            let mut rest = p.as_str();
            while let Some(at) = rest.find(value.as_str()) {
                next.push((false, rest[..at].to_string()));
                next.push((true, var.clone()));
                rest = &rest[at + value.len()..];
            }
            next.push((false, rest.to_string()));
        }
        pieces = next;
    }
    pieces.retain(|(v, p)| *v || !p.is_empty());
    pieces
}
