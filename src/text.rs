//! Text from outside (a shared store, an imported document, a job's plan, a
//! server's answer) made safe to print or to hand to a shell: the one place
//! that escapes control characters for a terminal ([`printable`]), masks
//! secrets in URLs ([`mask_secrets`]), caps a message's length ([`capped`])
//! and quotes a word for `sh` ([`shell_word`]). Every printer of stored text
//! goes through these, so a label holding ESC ] 52 or a CR cannot rewrite
//! the user's terminal or forge a line. Left out: HTML, Markdown, CSV and
//! the other formats' own escaping (`report`'s, each for its syntax), and
//! PostgreSQL URLs' passwords, which `store::postgres` hides itself.
//! Comes from issue 44 (S3, S4 and the webhook lines).

use std::borrow::Cow;

/// How many bytes of a message [`capped`] keeps by default.
pub const MESSAGE_CAP: usize = 2048;

/// How many bytes of a job's error or note the store keeps.
pub const STORED_MESSAGE_CAP: usize = 16 * 1024;

/// A job's error or note as the store keeps it: NUL (which PostgreSQL's
/// text refuses, and which would strand the job's end) written as `\0`,
/// secrets in URLs masked, and at most [`STORED_MESSAGE_CAP`] bytes.
pub fn storable(message: &str) -> String {
    let text = message.replace('\0', "\\0");
    capped(&mask_secrets(&text), STORED_MESSAGE_CAP).into_owned()
}

/// `text` with every control character (C0, DEL, C1: ESC, BEL, NUL, CR,
/// LF, tab…) written as a visible escape (`\e`, `\r`, `\n`, `\t`, `\0`,
/// `\u{9b}`), and the bidirectional overrides that reorder what a terminal
/// shows (U+202A–U+202E, U+2066–U+2069) too. Text without them is borrowed.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    text.chars().for_each(|c| push_escaped(&mut out, c));
    Cow::Owned(out)
}

/// `c` as [`printable`] writes it.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\0' => out.push_str("\\0"),
        '\u{1b}' => out.push_str("\\e"),
        c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Text for a terminal, whole (tables, reports): [`printable`], except that
/// its line breaks and tabs stay, and so do colour sequences (`ESC [ 31 m`:
/// SGR, which only colours). Every other escape — OSC (title, clipboard),
/// cursor moves, clearing, CR — is shown, not obeyed.
pub fn terminal_text(text: &str) -> Cow<'_, str> {
    let kept = |c: char| c == '\n' || c == '\t';
    if !text.chars().any(|c| needs_escape(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let sgr = sgr_length(rest);
        if sgr > 0 {
            out.push_str(&rest[..sgr]);
            rest = &rest[sgr..];
            continue;
        }
        match kept(c) {
            true => out.push(c),
            false => push_escaped(&mut out, c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// The length of the SGR sequence `ESC [ digits and ; m` that `text`
/// starts with, or 0.
fn sgr_length(text: &str) -> usize {
    let Some(body) = text.strip_prefix("\u{1b}[") else {
        return 0;
    };
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    match body.as_bytes().get(params) {
        Some(b'm') => 2 + params + 1,
        _ => 0,
    }
}

/// Whether [`printable`] escapes `c`.
pub fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `message` cut to at most `cap` bytes (at a character boundary), with
/// "… (N bytes left out)" when it was longer.
pub fn capped(message: &str, cap: usize) -> Cow<'_, str> {
    if message.len() <= cap {
        return Cow::Borrowed(message);
    }
    let mut end = cap;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}… ({} bytes left out)",
        &message[..end],
        message.len() - end
    ))
}

/// `text` with the secrets of every URL in it masked: the password of a
/// `scheme://user:password@host` (and, where a URL has a user part but no
/// password, the whole user part), `password=` parameters, and the tokens of
/// Slack-style webhook paths (`/services/T…/B…/SECRET`, `/hooks/SECRET`).
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    if !text.contains("://") && !text.contains("password=") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme is the word before "://".
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |i| i + 1);
        out.push_str(&rest[..start]);
        let end = rest[at + 3..]
            .find(|c: char| c.is_whitespace() || "'\"<>`".contains(c))
            .map_or(rest.len(), |i| at + 3 + i);
        out.push_str(&mask_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(mask_password_parameters(&out))
}

/// One URL with its secrets masked (see [`mask_secrets`]).
fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    // A password may hold '@' (the host follows the last one of the
    // authority), and '/', '?' or '#' too (`user:pa/ss@host`).
    let user_end = rest[..authority_end]
        .rfind('@')
        .or_else(|| password_end(rest));
    let (authority, path) = match user_end {
        Some(at) => {
            let path_start = rest[at + 1..]
                .find(['/', '?', '#'])
                .map_or(rest.len(), |i| at + 1 + i);
            let user = &rest[..at];
            // A user name alone is no secret in a database URL; in a
            // webhook's (`https://TOKEN@host`) it is the credential.
            let shown = match user.split_once(':') {
                Some((name, _)) => format!("{name}:***"),
                None if scheme.starts_with("postgres") => user.to_string(),
                None => "***".into(),
            };
            (
                format!("{shown}@{}", &rest[at + 1..path_start]),
                &rest[path_start..],
            )
        }
        None => (rest[..authority_end].to_string(), &rest[authority_end..]),
    };
    format!("{scheme}://{authority}{}", mask_path_tokens(path))
}

/// Where the `user:password` of `rest` (a URL after its `://`) ends, when
/// the password holds a '/', '?' or '#': a user name without them, a ':',
/// then the last '@' — unless what follows the ':' is a port (digits, then
/// the path). Masking a path's '@' with it errs on the safe side.
fn password_end(rest: &str) -> Option<usize> {
    let colon = rest.find(':')?;
    if rest[..colon].contains(['/', '?', '#', '@']) {
        return None;
    }
    let after = &rest[colon + 1..];
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && (after.len() == digits || after[digits..].starts_with(['/', '?', '#'])) {
        return None;
    }
    rest.rfind('@').filter(|&at| at > colon)
}

/// A webhook path with its secret parts masked: Slack's
/// `/services/TEAM/BOT/SECRET` keeps TEAM and BOT, and the part after
/// `/hooks/` (Mattermost, Discord's `/api/webhooks/ID/TOKEN`) is masked.
fn mask_path_tokens(path: &str) -> String {
    let (path, query) = path.split_at(path.find('?').unwrap_or(path.len()));
    let parts: Vec<&str> = path.split('/').collect();
    let mut out: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    for (i, part) in parts.iter().enumerate() {
        match *part {
            "services" => out.iter_mut().skip(i + 3).for_each(mask_part),
            "hooks" => out.iter_mut().skip(i + 1).for_each(mask_part),
            "webhooks" => out.iter_mut().skip(i + 2).for_each(mask_part),
            _ => {}
        }
    }
    format!("{}{query}", out.join("/"))
}

fn mask_part(part: &mut String) {
    if !part.is_empty() {
        *part = "***".into();
    }
}

/// `password=VALUE` parameters (of a URL's query, or of a key=value
/// connection string) with VALUE masked.
fn mask_password_parameters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("password=") {
        let value = at + "password=".len();
        out.push_str(&rest[..value]);
        let end = rest[value..]
            .find(|c: char| c == '&' || c.is_whitespace() || "'\"".contains(c))
            .map_or(rest.len(), |i| value + i);
        if end > value {
            out.push_str("***");
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `word` for a POSIX shell: as is when it is plainly safe, else
/// single-quoted (a `'` inside written `'\''`), so that a path with a space
/// or `$(…)` in it stays one word and runs nothing.
pub fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_message_holds_no_nul_no_secret_and_at_most_16_kib() {
        let huge = format!(
            "a\0b https://bob:pw@hooks.example.com/x {}",
            "y".repeat(300_000)
        );
        let stored = storable(&huge);
        assert!(
            stored.starts_with("a\\0b https://bob:***@hooks.example.com/x "),
            "{}",
            &stored[..60]
        );
        assert!(!stored.contains('\0') && !stored.contains(":pw@"));
        assert!(stored.len() < STORED_MESSAGE_CAP + 40, "{}", stored.len());
        assert!(stored.ends_with("bytes left out)"));
        assert_eq!(storable("plain"), "plain");
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(printable("plain label"), "plain label");
        assert!(matches!(printable("plain"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}]52;c;aGk=\u{7}b\r\nc\0\t"),
            "a\\e]52;c;aGk=\\u{7}b\\r\\nc\\0\\t"
        );
        assert_eq!(printable("x\u{9b}31m\u{202e}y"), "x\\u{9b}31m\\u{202e}y");
        assert!(!printable("\u{1b}[2J\u{7f}").contains(|c: char| needs_escape(c)));
    }

    #[test]
    fn terminal_text_keeps_lines_tabs_and_colours_only() {
        let table = "a\tb\n\u{1b}[31mslower\u{1b}[0m\n";
        assert_eq!(terminal_text(table), table);
        assert_eq!(
            terminal_text("x\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\r\u{1b}[31m!\n"),
            "x\\e]52;c;aGk=\\u{7}\\e[2J\\r\u{1b}[31m!\n"
        );
    }

    #[test]
    fn long_messages_are_capped_with_what_was_left_out() {
        assert_eq!(capped("short", 10), "short");
        let long = "é".repeat(3000); // 6000 bytes
        let cut = capped(&long, MESSAGE_CAP);
        assert!(cut.ends_with("… (3952 bytes left out)"), "{cut}");
        assert!(cut.len() < MESSAGE_CAP + 40);
    }

    #[test]
    fn a_password_with_a_slash_is_masked_whole() {
        let m = |s: &str| mask_secrets(s).into_owned();
        assert_eq!(
            m("posting to https://bob:pa/ss?x@hooks.example.com/x failed"),
            "posting to https://bob:***@hooks.example.com/x failed"
        );
        assert_eq!(
            m("postgresql://slash:ab/cd?ef+gh@127.0.0.1:5432/db"),
            "postgresql://slash:***@127.0.0.1:5432/db"
        );
        // A port is no password; a path's '@' is no user.
        assert_eq!(m("http://host:8080/a@b"), "http://host:8080/a@b");
        assert_eq!(
            m("https://example.com/@someone"),
            "https://example.com/@someone"
        );
    }

    #[test]
    fn secrets_in_urls_are_masked() {
        let m = |s: &str| mask_secrets(s).into_owned();
        assert_eq!(
            m("cannot post to https://bob:hunter2@hooks.example.com/x: refused"),
            "cannot post to https://bob:***@hooks.example.com/x: refused"
        );
        assert_eq!(
            m("'https://hooks.slack.com/services/T0001/B0002/XXXXSECRETXXXX' failed"),
            "'https://hooks.slack.com/services/T0001/B0002/***' failed"
        );
        assert_eq!(
            m("http://mm.example/hooks/abcdef123 and http://ok.example/report"),
            "http://mm.example/hooks/*** and http://ok.example/report"
        );
        assert_eq!(
            m("postgres://u:p@ss@db/x?sslmode=require&password=zz"),
            "postgres://u:***@db/x?sslmode=require&password=***"
        );
        assert_eq!(
            m("host=db password=zz user=u"),
            "host=db password=*** user=u"
        );
        assert_eq!(m("https://tok@api.example/"), "https://***@api.example/");
        assert_eq!(
            m("in postgresql://bob@db:5432/x"),
            "in postgresql://bob@db:5432/x"
        );
        assert_eq!(m("no url here"), "no url here");
    }

    #[test]
    fn shell_words_stay_one_word() {
        assert_eq!(shell_word("/usr/bin/osbench"), "/usr/bin/osbench");
        assert_eq!(shell_word("/a b/osbench"), "'/a b/osbench'");
        assert_eq!(shell_word("/$(touch X)/o"), "'/$(touch X)/o'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
