//! `osbench env` as text: one `key value` line per value of the environment,
//! nested keys dotted (`cpuidle.haltpoll.guest_halt_poll_ns 0`), what could
//! not be read as `absent.KEY reason`. The JSON form is the document's `env`.
//! Left out: how two environments differ (the comparison renderers show it).

use std::fmt::Write;

use crate::env::{Environment, flatten};

/// Every value of `env`, one per line, keys aligned.
pub fn env_text(env: &Environment) -> String {
    env_text_within(env, None)
}

/// [`env_text`] fitted to `width` columns (`None`: one line per value): a
/// long value wraps at words under the values.
pub fn env_text_within(env: &Environment, width: Option<usize>) -> String {
    let flat = flatten(env);
    let keys = flat
        .keys()
        .map(|k| super::display_width(k))
        .max()
        .unwrap_or(0)
        .min(40);
    let mut out = String::new();
    for (key, value) in &flat {
        let _ = writeln!(out, "{} {value}", super::pad_right(key, keys));
    }
    super::fit::wrap_hanging(&out, width, keys + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_keys_are_dotted_and_absences_explained() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proc");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("cmdline"), "quiet\n").unwrap();
        let env = crate::env::capture_from(&crate::env::probe::Sys::at(dir.path()));
        let text = env_text(&env);
        assert!(
            text.lines()
                .any(|l| l.starts_with("cmdline ") && l.ends_with(" quiet")),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("absent.cpuidle ")),
            "{text}"
        );
        assert!(text.lines().any(|l| l.starts_with("kernel ")), "{text}");
    }
}
