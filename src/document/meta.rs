//! The run's metadata (`--meta KEY=VALUE`): what a run measured, named by
//! the user, above all the revision under test (the conventional keys
//! [`CONVENTIONAL`]). Here: the rules a key and a value follow, for the
//! command line and for documents read back. Left out: what a key means;
//! osbench only stores, shows, filters and orders by them.

use std::collections::BTreeMap;

/// The keys `history` shows as columns, in this order.
pub const CONVENTIONAL: [&str; 3] = ["commit", "branch", "build"];

/// Longest key and value, in bytes (a commit id, a branch, a build URL fit).
const MAX_KEY: usize = 64;
const MAX_VALUE: usize = 512;

/// Whether `key` is a meta key: a letter, then letters, digits, `_`, `-`, `.`.
pub fn valid_key(key: &str) -> bool {
    key.len() <= MAX_KEY
        && key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Why `value` cannot be a meta value, if it cannot.
fn value_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("the value is empty (an unset shell variable?)")
    } else if value.len() > MAX_VALUE {
        Some("the value is longer than 512 bytes")
    } else if value.chars().any(char::is_control) {
        Some("the value contains control characters (line breaks, tabs)")
    } else {
        None
    }
}

/// `KEY=VALUE` as the command line gives it.
pub fn parse_pair(s: &str) -> Result<(String, String), String> {
    let Some((key, value)) = s.split_once('=') else {
        return Err(format!(
            "'{s}' is not KEY=VALUE (e.g. --meta commit=$(git rev-parse --short HEAD))"
        ));
    };
    if !valid_key(key) {
        return Err(format!(
            "'{key}' is not a meta key: a letter, then letters, digits, '_', '-' or '.' \
             (at most {MAX_KEY}), e.g. commit, branch, build"
        ));
    }
    if let Some(problem) = value_problem(value) {
        return Err(format!("--meta {key}: {problem}"));
    }
    Ok((key.to_string(), value.to_string()))
}

/// The pairs as a document's map; a key given twice is an error.
pub fn collect(pairs: &[(String, String)]) -> Result<BTreeMap<String, String>, String> {
    let mut meta = BTreeMap::new();
    for (key, value) in pairs {
        if let Some(old) = meta.insert(key.clone(), value.clone())
            && old != *value
        {
            return Err(format!(
                "--meta {key} is given twice ({old}, {value}); give each key once"
            ));
        }
    }
    Ok(meta)
}

/// A stored document's metadata follows the same rules (a reader checks it).
pub fn check(meta: &BTreeMap<String, String>) -> Result<(), String> {
    for (key, value) in meta {
        if !valid_key(key) {
            return Err(format!("run.meta key '{key}' is not a meta key"));
        }
        if let Some(problem) = value_problem(value) {
            return Err(format!("run.meta {key}: {problem}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_checked_and_collected() {
        assert_eq!(
            parse_pair("commit=ab12=x").unwrap(),
            ("commit".into(), "ab12=x".into())
        );
        for (bad, says) in [
            ("commit", "not KEY=VALUE"),
            ("=abc", "not a meta key"),
            ("1x=abc", "not a meta key"),
            ("a b=abc", "not a meta key"),
            ("ké=abc", "not a meta key"),
            ("commit=", "empty"),
            ("commit=a\nb", "control characters"),
        ] {
            let e = parse_pair(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let pairs = [
            ("commit".to_string(), "a".to_string()),
            ("branch".to_string(), "main".to_string()),
        ];
        assert_eq!(collect(&pairs).unwrap().len(), 2);
        let twice = [pairs[0].clone(), ("commit".into(), "b".into())];
        assert!(collect(&twice).unwrap_err().contains("given twice"));
        let mut stored = collect(&pairs).unwrap();
        assert!(check(&stored).is_ok());
        stored.insert("bad key".into(), "x".into());
        assert!(check(&stored).is_err());
    }
}
