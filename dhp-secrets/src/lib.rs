//! # dhp-secrets — store secrets: masked when printed, found as libpq does
//!
//! [`mask_secrets`] is used by every program of the workspace that prints
//! a store location or a message that may hold one: dhp-core's errors and
//! `dhp`'s output, dhp-conform's console and reports, dhp-chaos's results.
//! [`passfile`] finds a PostgreSQL password the URL does not give
//! (`PGPASSWORD`, the password file). A crate of its own, so that the
//! judges (dhp-conform, dhp-chaos) handle secrets exactly as dhp-core does
//! without linking the implementation they judge.
//!
//! ```
//! use dhp_secrets::mask_secrets;
//! assert_eq!(mask_secrets("postgres://u:pw@h/db"), "postgres://u:***@h/db");
//! assert_eq!(mask_secrets("postgres://h/db?password=pw&x=1"), "postgres://h/db?password=***&x=1");
//! assert_eq!(mask_secrets("host=h password='p w' user=u"), "host=h password=*** user=u");
//! ```

pub mod passfile;

/// The mask a secret is replaced with.
pub const MASK: &str = "***";

/// A parameter name that carries a secret (libpq's `password`,
/// `sslpassword`, an environment-style `PGPASSWORD`): any name ending in
/// `password`, any case.
fn is_secret_key(key: &str) -> bool {
    key.len() >= "password".len() && key.to_ascii_lowercase().ends_with("password")
}

/// The user info of a URL's authority (`user:pw` of `user:pw@host`), as
/// a length after `://`: up to the last `@` before the query, white space
/// or a quote (so a password holding an unescaped `/` or `#` is still
/// found).
fn userinfo_len(s: &str) -> Option<usize> {
    let end = s.find(|c: char| matches!(c, '?' | '"' | '\'' | '<' | '>') || c.is_whitespace()).unwrap_or(s.len());
    s[..end].rfind('@')
}

/// Every secret in `text` masked: the one function every printer of a
/// store location uses (errors, `Display` of a location, dhp-conform's
/// messages and reports, the harnesses' logs). `text` may be a URL, a
/// libpq `key=value` connection string, or any message that contains
/// either. Masked:
/// - the password of a URL's user info: `scheme://user:pw@host` →
///   `scheme://user:***@host` (a bare `user@host` has none);
/// - the value of every parameter whose name ends in `password` (libpq's
///   `password=` and `sslpassword=`, `PGPASSWORD=`, any case), in a URL's
///   query (up to the next `&`) or in `key=value` text (a `'quoted value'`
///   with `\'` escapes, or up to white space).
pub fn mask_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let b = text.as_bytes();
    while i < b.len() {
        // a URL's user info
        if text[i..].starts_with("://") {
            out.push_str("://");
            i += 3;
            if let Some(len) = userinfo_len(&text[i..]) {
                let userinfo = &text[i..i + len];
                match userinfo.split_once(':') {
                    Some((user, _)) => out.push_str(&format!("{user}:{MASK}")),
                    None => out.push_str(userinfo),
                }
                i += len;
            }
            continue;
        }
        // `key=value` where key names a secret
        if b[i] == b'=' {
            let start =
                text[..i].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).map_or(0, |p| p + 1);
            if is_secret_key(&text[start..i]) {
                out.push('=');
                i += 1;
                let rest = &text[i..];
                let len = if rest.starts_with('\'') {
                    // libpq quoting: up to the closing quote, `\'` and `\\` escaped
                    let mut j = 1;
                    let rb = rest.as_bytes();
                    while j < rb.len() && rb[j] != b'\'' {
                        j += if rb[j] == b'\\' { 2 } else { 1 };
                    }
                    (j + 1).min(rb.len())
                } else {
                    rest.find(|c: char| c == '&' || c == '#' || c.is_whitespace() || c == '"').unwrap_or(rest.len())
                };
                let mut len = len;
                while !rest.is_char_boundary(len) {
                    len += 1;
                }
                if len > 0 {
                    out.push_str(MASK);
                }
                i += len;
                continue;
            }
        }
        let ch = text[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}
