//! Conversions from the borrowed `&[(&str, &str)]` pairs of the public API to the
//! owned lists the WIT functions take.

/// Owned key/value pairs, as the WIT `tags` and `headers` types.
pub(crate) type Pairs = Vec<(String, String)>;

/// Copies borrowed pairs into an owned list.
pub(crate) fn owned(pairs: &[(&str, &str)]) -> Pairs {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Sets `key` to `value`, replacing an earlier value of the same key
/// (compared ASCII-case-insensitively when `ignore_case`).
pub(crate) fn set(pairs: &mut Pairs, key: String, value: String, ignore_case: bool) {
    let same = |k: &String| {
        if ignore_case {
            k.eq_ignore_ascii_case(&key)
        } else {
            *k == key
        }
    };
    if let Some(slot) = pairs.iter_mut().find(|(k, _)| same(k)) {
        slot.1 = value;
    } else {
        pairs.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_or_appends() {
        let mut pairs = owned(&[("Name", "a"), ("x", "1")]);
        set(&mut pairs, "name".into(), "b".into(), false);
        set(&mut pairs, "NAME".into(), "c".into(), true);
        assert_eq!(
            pairs,
            vec![
                ("Name".to_owned(), "c".to_owned()),
                ("x".to_owned(), "1".to_owned()),
                ("name".to_owned(), "b".to_owned()),
            ]
        );
    }
}
