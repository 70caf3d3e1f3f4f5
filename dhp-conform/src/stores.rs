//! Where each assertion's stores live (`--store`): fresh directories (the
//! default, or under a given directory), or fresh schemas of a PostgreSQL
//! database, one per store an assertion asks for, dropped afterwards
//! unless `--keep`.

use crate::error::Error;
use crate::protocol::feature;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The engine an implementation's stores are created on.
#[derive(Debug)]
pub enum StoreBase {
    /// A directory per store, inside the assertion's temporary directory,
    /// which is created under this directory (`None`: the system's).
    Dir(Option<PathBuf>),
    /// A schema per store in this database.
    Postgres(PgBase),
}

impl Default for StoreBase {
    fn default() -> Self {
        StoreBase::Dir(None)
    }
}

impl StoreBase {
    /// Parse a `--store` value: a `postgres://` / `postgresql://` URL
    /// without `schema=`, or an existing directory.
    pub fn parse(s: &str) -> Result<StoreBase, Error> {
        if is_postgres(s) {
            return PgBase::new(s)
                .map(StoreBase::Postgres)
                .map_err(|e| Error::Store { url: mask(s), source: Box::new(e) });
        }
        let bad = |problem| Error::StoreArg { value: s.to_string(), problem };
        if s.contains("://") {
            return Err(bad("not a directory and not a postgres:// URL"));
        }
        let p = PathBuf::from(s);
        if !p.is_dir() {
            return Err(bad("no such directory"));
        }
        Ok(StoreBase::Dir(Some(p)))
    }

    /// `sqlite` or `postgres`: the suffix of labels when several engines run.
    pub fn engine(&self) -> &'static str {
        match self {
            StoreBase::Dir(_) => "sqlite",
            StoreBase::Postgres(_) => "postgres",
        }
    }

    /// The feature an adapter must declare to be given such a location.
    pub fn needs(&self) -> Option<&'static str> {
        match self {
            StoreBase::Dir(_) => None,
            StoreBase::Postgres(_) => Some(feature::POSTGRES_STORE),
        }
    }

    /// For messages (password masked).
    pub fn describe(&self) -> String {
        match self {
            StoreBase::Dir(None) => "directories under the system temp dir".into(),
            StoreBase::Dir(Some(p)) => format!("directories under {}", p.display()),
            StoreBase::Postgres(pg) => format!("a fresh schema per store in {}", mask(&pg.url)),
        }
    }
}

/// `postgres://` or `postgresql://`, any case.
pub fn is_postgres(s: &str) -> bool {
    let l = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    l.starts_with("postgres://") || l.starts_with("postgresql://")
}

/// Every secret of a location masked (`user:secret@` becomes
/// `user:***@`, `password=secret` becomes `password=***`, …): dhp-core's
/// [`mask_secrets`](dhp_secrets::mask_secrets), the one
/// masking function of every printer.
pub fn mask(url: &str) -> String {
    dhp_secrets::mask_secrets(url)
}

/// A PostgreSQL base URL and the schemas handed out from it.
#[derive(Debug)]
pub struct PgBase {
    url: String,
    run: String,
    next: AtomicU64,
}

impl PgBase {
    fn new(url: &str) -> Result<PgBase, Error> {
        if split_schema(url).1.is_some() {
            return Err(Error::SchemaInBaseUrl);
        }
        // the runner connects itself (to drop schemas, to read stores): check now
        client(url)?;
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        let run = format!("{:x}{:x}", std::process::id(), stamp % 0x10_0000);
        Ok(PgBase { url: url.to_string(), run, next: AtomicU64::new(0) })
    }

    /// A new, unique schema name and the store location naming it.
    pub fn location(&self) -> (String, String) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let schema = format!("dhpc_{}_{n}", self.run);
        let sep = if self.url.contains('?') { '&' } else { '?' };
        (schema.clone(), format!("{}{sep}schema={schema}", self.url))
    }

    /// Drop these schemas (and everything in them).
    pub fn drop_schemas(&self, schemas: &[String]) -> Result<(), Error> {
        if schemas.is_empty() {
            return Ok(());
        }
        let mut c = client(&self.url)?;
        for s in schemas {
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE"))
                .map_err(|source| Error::DropSchema { schema: s.clone(), source })?;
        }
        Ok(())
    }
}

/// `(url without schema=, schema)`.
pub fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_string(), None) };
    let mut schema = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.strip_prefix("schema=") {
            Some(v) => {
                schema = Some(v.to_string());
                false
            }
            None => !kv.is_empty(),
        })
        .collect();
    let base = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    (base, schema)
}

/// A connection to the database of `url` (any `schema=` ignored), without
/// TLS (as dhp-core's store). The password comes as for `dhp`: the URL's,
/// else `PGPASSWORD`, else the password file (`passfile=`, `PGPASSFILE`,
/// `~/.pgpass`).
pub fn client(url: &str) -> Result<postgres::Client, Error> {
    let (base, _) = split_schema(url);
    let masked = mask(&base);
    let (base, passfile) = dhp_secrets::passfile::split_passfile(&base);
    let mut cfg: postgres::Config = base.parse().map_err(|source| Error::PgUrl { url: masked.clone(), source })?;
    dhp_secrets::passfile::fill_password(&mut cfg, passfile.as_deref());
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(Duration::from_secs(10));
    }
    // the client library bounds only the TCP connect: a server that accepts
    // and never answers is given up on after the timeout too
    let limit = cfg.get_connect_timeout().copied().unwrap_or(Duration::from_secs(10));
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::spawn(move || {
        let _ = tx.send(cfg.connect(postgres::NoTls));
    });
    match rx.recv_timeout(limit) {
        Ok(res) => res.map_err(|source| Error::PgConnect { url: masked, source }),
        Err(_) => Err(Error::PgConnectTimeout { url: masked, timeout_s: limit.as_secs_f64() }),
    }
}

/// The server's message and what to do about it, for a failed connection
/// or statement: the client library's own `Display` of a server error is
/// only "db error".
pub fn explain(e: &postgres::Error) -> String {
    use postgres::error::SqlState;
    let Some(db) = e.as_db_error() else {
        // the client's own failure: its message and every cause
        let mut s = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(cause) = src {
            let c = cause.to_string();
            if !s.contains(&c) {
                s = format!("{s}: {c}");
            }
            src = cause.source();
        }
        return s;
    };
    let hint = match db.code() {
        c if *c == SqlState::INVALID_PASSWORD => {
            "; check the user and password (the URL's, PGPASSWORD, or the password file: passfile=, PGPASSFILE, ~/.pgpass)"
        }
        c if *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            "; the server's pg_hba.conf admits no such user from this host, or the role does not exist"
        }
        c if *c == SqlState::INVALID_CATALOG_NAME => {
            "; create the database first (CREATE DATABASE, or createdb NAME) or give an existing one in the URL"
        }
        c if *c == SqlState::INSUFFICIENT_PRIVILEGE => "; grant the role CONNECT and CREATE on the database",
        c if *c == SqlState::TOO_MANY_CONNECTIONS => "; the server is at max_connections: retry later or raise it",
        _ => "",
    };
    format!("{} ({}){hint}", db.message(), db.code().code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(is_postgres("PostgreSQL://h/db") && is_postgres("postgres://h") && !is_postgres("/tmp/x"));
        assert_eq!(mask("postgres://u:pw@h:5/db?x=1"), "postgres://u:***@h:5/db?x=1");
        assert_eq!(mask("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(mask("postgres://u@h/db?password=pw&a=1"), "postgres://u@h/db?password=***&a=1");
        assert_eq!(
            split_schema("postgres://h/db?a=1&schema=s&b=2"),
            ("postgres://h/db?a=1&b=2".into(), Some("s".into()))
        );
        assert_eq!(split_schema("postgres://h/db?schema=s"), ("postgres://h/db".into(), Some("s".into())));
        assert_eq!(split_schema("postgres://h/db"), ("postgres://h/db".into(), None));
        let e = StoreBase::parse("postgres://h/db?schema=x").unwrap_err();
        assert!(matches!(&e, Error::Store { source, .. } if matches!(**source, Error::SchemaInBaseUrl)), "{e:?}");
        assert!(e.to_string().starts_with("--store postgres://h/db?schema=x: give a base URL without schema="), "{e}");
        let e = StoreBase::parse("postgres://u:pw@h/db?schema=x").unwrap_err();
        assert!(!e.to_string().contains("pw"), "the password is masked: {e}");
        assert!(StoreBase::parse("mysql://h/db").is_err());
        assert!(StoreBase::parse("/nonexistent/dir/x").is_err());
    }
}
