//! Where a store is: a directory (the SQLite file inside it) or a
//! PostgreSQL URL.
//!
//! Every ROOT the crate takes goes through [`StoreLocation::parse`]:
//! - `postgres://…` or `postgresql://…` is a PostgreSQL store, with libpq's
//!   URL conventions (user, password, host, port, database, `sslmode`, …)
//!   plus `schema=NAME`, the PostgreSQL schema holding this store (default
//!   `dhp`), so several independent stores share one database;
//! - anything else that looks like a URL (`scheme:` followed by `//`, or a
//!   `postgres:`/`postgresql:` prefix without it) is an error — never a
//!   directory named `postgres:`;
//! - everything else is a directory.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The default PostgreSQL schema of a store.
pub const DEFAULT_SCHEMA: &str = "dhp";

/// A parsed store location.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A directory holding `dhp.sqlite3`.
    Dir(PathBuf),
    /// A PostgreSQL store.
    Postgres(PgLocation),
}

/// A PostgreSQL URL split into what the client library parses and the
/// schema, which only DHP knows.
#[derive(Clone, PartialEq, Eq)]
pub struct PgLocation {
    /// The URL without `schema=` (libpq syntax).
    pub url: String,
    /// The schema holding the store.
    pub schema: String,
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string())
    }
}

impl std::fmt::Debug for PgLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self)
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Dir(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(pg) => write!(f, "{pg}"),
        }
    }
}

impl std::fmt::Display for PgLocation {
    /// The URL with any password masked, and the schema.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (schema {})", redact(&self.url), self.schema)
    }
}

/// `scheme://user:secret@host` → `scheme://user:***@host`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_end);
    match auth.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn location_err(input: &str, reason: impl Into<String>) -> Error {
    Error::StoreLocation { location: redact(input), reason: reason.into() }
}

/// The scheme of a URL-looking string: letters, digits, `+-.` before `:`.
fn url_scheme(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    let mut chars = scheme.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !(first_ok && rest_ok) {
        return None;
    }
    let lower = scheme.to_ascii_lowercase();
    (rest.starts_with("//") || lower == "postgres" || lower == "postgresql").then_some(scheme)
}

/// A PostgreSQL identifier DHP accepts as a schema name: it is spliced
/// into SQL (quoted), so keep it to `[a-z_][a-z0-9_]{0,62}`.
pub fn check_schema(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(Error::StoreLocation {
            location: format!("schema={name}"),
            reason: "a schema name is 1-63 characters of [a-z0-9_], starting with a letter or '_', not 'pg_'".into(),
        })
    }
}

impl StoreLocation {
    /// Parse a ROOT argument.
    pub fn parse(input: &str) -> Result<Self> {
        let Some(scheme) = url_scheme(input) else {
            if input.is_empty() {
                return Err(location_err(input, "empty store location"));
            }
            return Ok(StoreLocation::Dir(PathBuf::from(input)));
        };
        let lower = scheme.to_ascii_lowercase();
        if lower != "postgres" && lower != "postgresql" {
            return Err(location_err(
                input,
                format!("unsupported scheme {scheme:?}: give a directory or a postgres:// URL"),
            ));
        }
        if !input[scheme.len() + 1..].starts_with("//") {
            return Err(location_err(input, "a PostgreSQL location is a URL: postgres://user:password@host:port/db"));
        }
        let (base, query) = match input.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (input, None),
        };
        let mut schema = None;
        let mut kept = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("schema", v)) => {
                    if schema.replace(v.to_string()).is_some() {
                        return Err(location_err(input, "schema= given twice"));
                    }
                }
                _ => kept.push(pair),
            }
        }
        let schema = schema.unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
        check_schema(&schema)?;
        let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
        Ok(StoreLocation::Postgres(PgLocation { url, schema }))
    }

    /// Parse a path argument; a path that is not UTF-8 is a directory.
    pub fn from_path(p: &Path) -> Result<Self> {
        match p.to_str() {
            Some(s) => Self::parse(s),
            None => Ok(StoreLocation::Dir(p.to_path_buf())),
        }
    }

    /// The directory, for a SQLite store.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            StoreLocation::Dir(p) => Some(p),
            StoreLocation::Postgres(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(s: &str) -> PgLocation {
        match StoreLocation::parse(s).unwrap() {
            StoreLocation::Postgres(p) => p,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn directories_stay_directories() {
        for s in ["/tmp/x", "rel/dir", "./postgres", "dir:with:colons", "C-3PO", "a b"] {
            assert_eq!(StoreLocation::parse(s).unwrap(), StoreLocation::Dir(s.into()), "{s}");
        }
    }

    #[test]
    fn postgres_urls_and_schema() {
        let p = pg("postgres://u:pw@h:5433/db");
        assert_eq!((p.url.as_str(), p.schema.as_str()), ("postgres://u:pw@h:5433/db", "dhp"));
        let p = pg("postgresql://h/db?sslmode=disable&schema=tenant_a&connect_timeout=3");
        assert_eq!(p.url, "postgresql://h/db?sslmode=disable&connect_timeout=3");
        assert_eq!(p.schema, "tenant_a");
        assert_eq!(pg("POSTGRES://h/db?schema=s1").schema, "s1");
    }

    #[test]
    fn other_schemes_and_bad_schemas_are_errors() {
        for s in [
            "mysql://h/db",
            "http://x",
            "sqlite:///tmp/x",
            "postgres:relative",
            "postgresql:",
            "postgres://h/db?schema=Bad",
            "postgres://h/db?schema=",
            "postgres://h/db?schema=a&schema=b",
            "postgres://h/db?schema=pg_catalog",
            "postgres://h/db?schema=x;drop",
            "",
        ] {
            let e = StoreLocation::parse(s).unwrap_err();
            assert!(matches!(e, Error::StoreLocation { .. }), "{s}: {e:?}");
            assert_eq!(e.exit_code(), 11, "{s}");
        }
    }

    #[test]
    fn passwords_are_masked_in_messages() {
        let e = StoreLocation::parse("mysql://me:secret@h/db").unwrap_err().to_string();
        assert!(!e.contains("secret") && e.contains("me:***@h"), "{e}");
        assert_eq!(pg("postgres://me:secret@h/db").to_string(), "postgres://me:***@h/db (schema dhp)");
    }
}
