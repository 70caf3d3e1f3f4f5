//! Where a PostgreSQL password comes from when the URL gives none, as
//! libpq does it: `PGPASSWORD`, then the password file — `passfile=` of
//! the URL, else `PGPASSFILE`, else `~/.pgpass`.
//!
//! The file's lines are `hostname:port:database:username:password`; `*`
//! in any of the first four fields matches anything; `\:` and `\\` stand
//! for `:` and `\`; blank lines and lines starting with `#` are skipped;
//! the first line that matches wins. As libpq, a file that is not a
//! regular file, or that its group or others may read or write, is
//! ignored with a warning (its mode should be `0600` or less). A missing
//! file is not an error: the server then asks for a password the client
//! does not have, and says so.

use std::path::{Path, PathBuf};

/// A `postgres://` URL without its password (the user info's and any
/// `password=` query parameter), and that password, percent-decoded, for
/// `PGPASSWORD`: what a harness puts on a child's command line and in its
/// environment, so the secret is never in an argv (`/proc/PID/cmdline` is
/// world-readable). A URL without a password comes back unchanged.
pub fn split_password(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_string(), None) };
    let auth_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_len);
    let mut password = None;
    let auth = match auth.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, pw)) => {
                password = Some(percent_decode(pw).unwrap_or_else(|| pw.to_string()));
                format!("{user}@{host}")
            }
            None => auth.to_string(),
        },
        None => auth.to_string(),
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let mut kept = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("password", v)) => password = Some(percent_decode(v).unwrap_or_else(|| v.to_string())),
            _ => kept.push(pair),
        }
    }
    let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
    (format!("{scheme}://{auth}{path}{query}"), password.filter(|p| !p.is_empty()))
}

/// A URL without its `passfile=` parameter, and that parameter's path
/// (percent-decoded): the client library refuses parameters it does not
/// know, and the password file is read here, not by it.
pub fn split_passfile(url: &str) -> (String, Option<PathBuf>) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_string(), None) };
    let mut passfile = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.strip_prefix("passfile=") {
            Some(v) => {
                passfile = percent_decode(v).filter(|p| !p.is_empty()).map(PathBuf::from);
                false
            }
            None => !kv.is_empty(),
        })
        .collect();
    let base = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    (base, passfile)
}

/// `%XX` escapes decoded; `None` for a bad escape or text that is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// What a password file is matched against (libpq's fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host as given (a Unix-socket directory as its path).
    pub host: String,
    /// The port, as text.
    pub port: String,
    /// The database (libpq's default: the user name).
    pub dbname: String,
    /// The user name.
    pub user: String,
}

/// The password for `target`: `PGPASSWORD` when set and not empty, else
/// the first matching line of the password file (`passfile`, else
/// `PGPASSFILE`, else `$HOME/.pgpass`).
pub fn lookup(target: &Target, passfile: Option<&Path>) -> Option<String> {
    if let Some(pw) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(pw);
    }
    let path = passfile.map(Path::to_path_buf).or_else(default_file)?;
    read_file(&path, target)
}

/// Give `config` a password when its URL has none (or an empty one):
/// [`lookup`] for its first host, port, database and user. A config that
/// has one is left alone (the URL's password wins, as in libpq).
pub fn fill_password(config: &mut postgres::Config, passfile: Option<&Path>) {
    if config.get_password().is_none_or(|p| p.is_empty()) {
        if let Some(pw) = lookup(&target_of(config), passfile) {
            config.password(pw);
        }
    }
}

/// What a password file is matched against: the first host (a socket
/// directory as its path; libpq's `localhost` when none is given), port
/// (default 5432), database (default: the user) and user (default: the
/// user running this process, as the client library).
pub fn target_of(config: &postgres::Config) -> Target {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => config.get_hostaddrs().first().map_or_else(|| "localhost".into(), |a| a.to_string()),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let dbname = config.get_dbname().map_or_else(|| user.clone(), str::to_string);
    Target { host, port, dbname, user }
}

/// `PGPASSFILE`, else `$HOME/.pgpass`.
fn default_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".pgpass"))
}

/// The password of the file's first line matching `target`; `None` (with
/// a warning for an unsafe or unreadable file) otherwise.
/// As libpq, a file it will not use is named on stderr (`WARNING: ...`).
fn read_file(path: &Path, target: &Target) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        eprintln!("WARNING: password file {} is not a plain file: ignored", path.display());
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "WARNING: password file {} has group or world access; permissions should be u=rw (0600) or less: ignored",
            path.display()
        );
        return None;
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("WARNING: password file {}: {e}: ignored", path.display());
            return None;
        }
    };
    find(&text, target)
}

/// The password of the first line of `text` that matches `target`.
pub fn find(text: &str, target: &Target) -> Option<String> {
    let want = [&target.host, &target.port, &target.dbname, &target.user];
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_fields(line);
        if fields.len() < 5 {
            continue;
        }
        // `*` is a wildcard only as the whole, unescaped field
        let matches = fields[..4].iter().zip(want).all(|((f, star), w)| *star || f == w);
        if matches {
            // the password is everything after the fourth colon
            return Some(fields[4..].iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>().join(":"));
        }
    }
    None
}

/// A line's fields, unescaped, each with whether it was a bare `*`.
fn split_fields(line: &str) -> Vec<(String, bool)> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut raw_star = true;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                raw_star = false;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ':' if fields.len() < 4 => {
                let star = raw_star && cur == "*";
                fields.push((std::mem::take(&mut cur), star));
                raw_star = true;
            }
            c => cur.push(c),
        }
    }
    let star = raw_star && cur == "*";
    fields.push((cur, star));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_split_off_urls() {
        assert_eq!(
            split_password("postgres://u:p%40w@h/db?schema=s"),
            ("postgres://u@h/db?schema=s".into(), Some("p@w".into()))
        );
        assert_eq!(
            split_password("postgres://u@h/db?password=x&a=1"),
            ("postgres://u@h/db?a=1".into(), Some("x".into()))
        );
        assert_eq!(split_password("postgres://u@h/db"), ("postgres://u@h/db".into(), None));
        assert_eq!(split_password("/tmp/x"), ("/tmp/x".into(), None));
    }

    fn t(host: &str, port: &str, db: &str, user: &str) -> Target {
        Target { host: host.into(), port: port.into(), dbname: db.into(), user: user.into() }
    }

    #[test]
    fn lines_wildcards_and_escapes() {
        let text = "# comment\n\nother:5432:db:u:no\nh:5432:db:u:first\nh:5432:db:u:second\n";
        assert_eq!(find(text, &t("h", "5432", "db", "u")).as_deref(), Some("first"));
        assert_eq!(find("*:*:*:u:any\n", &t("h", "1", "x", "u")).as_deref(), Some("any"));
        assert_eq!(find("*:*:*:u:any\n", &t("h", "1", "x", "v")), None);
        assert_eq!(find("h\\:x:*:*:*:p\\:w\\\\d\n", &t("h:x", "1", "d", "u")).as_deref(), Some("p:w\\d"));
        // an escaped star is a literal star
        assert_eq!(find("\\*:*:*:*:p\n", &t("h", "1", "d", "u")), None);
        assert_eq!(find("h:*:*:*:a:b\n", &t("h", "1", "d", "u")).as_deref(), Some("a:b"));
        assert_eq!(find("h:*:*:*\n", &t("h", "1", "d", "u")), None, "a line without a password field");
        assert_eq!(find("h:*:*:*:crlf\r\n", &t("h", "1", "d", "u")).as_deref(), Some("crlf"));
    }

    #[test]
    fn unsafe_files_are_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pgpass");
        std::fs::write(&p, "*:*:*:*:pw\n").unwrap();
        let target = t("h", "1", "d", "u");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_file(&p, &target).as_deref(), Some("pw"));
        for mode in [0o640, 0o604, 0o660, 0o606] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(read_file(&p, &target), None, "mode {mode:o}");
        }
        assert_eq!(read_file(dir.path(), &target), None, "a directory");
        assert_eq!(read_file(&dir.path().join("missing"), &target), None);
    }
}
