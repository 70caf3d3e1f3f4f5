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

/// A PostgreSQL URL split into what the client library parses and what
/// only DHP reads: the schema and the TLS settings.
#[derive(Clone, PartialEq, Eq)]
pub struct PgLocation {
    /// The URL without `schema=` and `sslrootcert=`, with a `verify-ca` or
    /// `verify-full` sslmode given to the client library as `require`
    /// (libpq syntax).
    pub url: String,
    /// The schema holding the store.
    pub schema: String,
    /// `sslmode=` (libpq's names; default `prefer`).
    pub sslmode: SslMode,
    /// `sslrootcert=`: a PEM file of the CA certificates to trust.
    pub sslrootcert: Option<PathBuf>,
    /// `passfile=`: libpq's password file, read when the URL gives no
    /// password and `PGPASSWORD` is unset (default `PGPASSFILE`, else
    /// `~/.pgpass`; see `store::postgres::passfile`).
    pub passfile: Option<PathBuf>,
}

/// libpq's `sslmode`, as DHP implements it (docs/postgres.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    /// Plaintext only.
    Disable,
    /// TLS when the server offers it (unverified, as libpq), else
    /// plaintext. `allow` is read as `prefer`.
    #[default]
    Prefer,
    /// TLS or fail; the certificate is not verified unless `sslrootcert`
    /// is given (then as `verify-ca`, as libpq does).
    Require,
    /// TLS, the chain verified against `sslrootcert`; any host name.
    VerifyCa,
    /// TLS, the chain verified and the host name matched.
    VerifyFull,
}

impl SslMode {
    fn parse(v: &str) -> Option<Self> {
        Some(match v {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }
}

/// `%XX` escapes of a URL parameter value decoded (libpq decodes them).
fn percent_decode(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = v.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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

pub use dhp_secrets::{mask_secrets, MASK};

/// A store location (or any text naming one) with every secret masked:
/// [`mask_secrets`].
pub fn redact(url: &str) -> String {
    mask_secrets(url)
}

// The one copy lives in dhp-secrets: the harnesses (dhp-chaos) use it
// without linking dhp-core.
pub use dhp_secrets::passfile::split_password;

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
        let mut sslmode = None;
        let mut sslrootcert = None;
        let mut passfile = None;
        let mut kept = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("schema", v)) => {
                    if schema.replace(v.to_string()).is_some() {
                        return Err(location_err(input, "schema= given twice"));
                    }
                }
                Some(("sslmode", v)) => {
                    let mode = SslMode::parse(v).ok_or_else(|| {
                        location_err(
                            input,
                            format!("sslmode={v}: use disable, allow, prefer, require, verify-ca or verify-full"),
                        )
                    })?;
                    sslmode = Some(mode);
                    // The client library knows disable/prefer/require; the
                    // verification is DHP's (store/postgres/tls.rs).
                    kept.push(match mode {
                        SslMode::Disable => "sslmode=disable",
                        SslMode::Prefer => "sslmode=prefer",
                        _ => "sslmode=require",
                    });
                }
                Some(("sslrootcert", v)) => {
                    let path = percent_decode(v)
                        .filter(|p| !p.is_empty())
                        .ok_or_else(|| location_err(input, format!("sslrootcert={v} is not a file path")))?;
                    sslrootcert = Some(PathBuf::from(path));
                }
                Some(("passfile", v)) => {
                    let path = percent_decode(v)
                        .filter(|p| !p.is_empty())
                        .ok_or_else(|| location_err(input, format!("passfile={v} is not a file path")))?;
                    passfile = Some(PathBuf::from(path));
                }
                _ => kept.push(pair),
            }
        }
        let schema = schema.unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
        check_schema(&schema)?;
        let sslmode = sslmode.unwrap_or_default();
        if matches!(sslmode, SslMode::VerifyCa | SslMode::VerifyFull) && sslrootcert.is_none() {
            return Err(location_err(
                input,
                "sslmode=verify-ca and verify-full need sslrootcert=PATH (a PEM file of the CA certificates to trust)",
            ));
        }
        let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
        Ok(StoreLocation::Postgres(PgLocation { url, schema, sslmode, sslrootcert, passfile }))
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
    fn tls_settings() {
        assert_eq!(pg("postgres://h/db").sslmode, SslMode::Prefer);
        let p = pg("postgres://h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20x.pem&schema=s");
        assert_eq!((p.sslmode, p.sslrootcert.as_deref()), (SslMode::VerifyFull, Some(Path::new("/tmp/ca x.pem"))));
        assert_eq!(p.url, "postgres://h/db?sslmode=require");
        let p = pg("postgres://h/db?sslmode=require&sslrootcert=/ca.pem");
        assert_eq!((p.sslmode, p.url.as_str()), (SslMode::Require, "postgres://h/db?sslmode=require"));
        assert_eq!(pg("postgres://h/db?sslmode=allow").sslmode, SslMode::Prefer);
        assert_eq!(pg("postgres://h/db?sslmode=disable").sslmode, SslMode::Disable);
        for s in [
            "postgres://h/db?sslmode=verify-full",
            "postgres://h/db?sslmode=verify-ca",
            "postgres://h/db?sslmode=always",
            "postgres://h/db?sslmode=verify-ca&sslrootcert=",
            "postgres://h/db?sslmode=verify-ca&sslrootcert=%zz",
        ] {
            let e = StoreLocation::parse(s).unwrap_err();
            assert!(matches!(e, Error::StoreLocation { .. }), "{s}: {e:?}");
        }
    }

    #[test]
    fn every_secret_form_is_masked() {
        for (text, want) in [
            ("postgres://u:pw@h/db", "postgres://u:***@h/db"),
            ("postgres://u@h/db?password=pw", "postgres://u@h/db?password=***"),
            (
                "postgres://u@h/db?sslmode=require&password=pw&schema=s",
                "postgres://u@h/db?sslmode=require&password=***&schema=s",
            ),
            ("postgres://u@h/db?sslpassword=pw", "postgres://u@h/db?sslpassword=***"),
            ("postgres://u:p/w#x@h/db", "postgres://u:***@h/db"),
            ("host=h password=pw dbname=d", "host=h password=*** dbname=d"),
            ("host=h password='p w\\' x' dbname=d", "host=h password=*** dbname=d"),
            ("PGPASSWORD=pw dhp status", "PGPASSWORD=*** dhp status"),
            (
                "at \"postgres://a:b@h\" and postgresql://c:d@h2/x?Password=e",
                "at \"postgres://a:***@h\" and postgresql://c:***@h2/x?Password=***",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("password=", "password="),
            ("passfile=/p/.pgpass", "passfile=/p/.pgpass"),
            ("password='é\\", "password=***"),
            ("/tmp/dir", "/tmp/dir"),
        ] {
            assert_eq!(mask_secrets(text), want, "{text}");
        }
    }

    // split_password itself is tested where it lives (dhp-secrets::passfile)
    #[test]
    fn passfiles_split_off_urls() {
        assert_eq!(pg("postgres://h/db?passfile=%2Ftmp%2Fpw&schema=s").passfile.as_deref(), Some(Path::new("/tmp/pw")));
        assert_eq!(pg("postgres://h/db?passfile=%2Ftmp%2Fpw").url, "postgres://h/db");
    }

    #[test]
    fn passwords_are_masked_in_messages() {
        let e = StoreLocation::parse("mysql://me:secret@h/db").unwrap_err().to_string();
        assert!(!e.contains("secret") && e.contains("me:***@h"), "{e}");
        assert_eq!(pg("postgres://me:secret@h/db").to_string(), "postgres://me:***@h/db (schema dhp)");
        assert_eq!(
            pg("postgres://me@h/db?password=secret").to_string(),
            "postgres://me@h/db?password=*** (schema dhp)"
        );
        let e = StoreLocation::parse("postgres://me@h/db?password=secret&sslmode=bad").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
    }
}
