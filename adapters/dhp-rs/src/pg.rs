//! The few PostgreSQL helpers the mutants need to break a store behind
//! dhp-core's back (dhp-conform has its own: the judge and the judged share
//! no code).

use std::time::Duration;

/// `postgres://` or `postgresql://`, any case.
pub(crate) fn is_postgres(s: &str) -> bool {
    let l = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    l.starts_with("postgres://") || l.starts_with("postgresql://")
}

/// The URL without its `schema=` parameter, and that schema.
pub(crate) fn split_schema(url: &str) -> (String, Option<String>) {
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

/// A connection to the database of `url` (any `schema=` ignored), without TLS.
pub(crate) fn client(url: &str) -> Result<postgres::Client, String> {
    let (base, _) = split_schema(url);
    let mut cfg: postgres::Config = base.parse().map_err(|e| format!("bad PostgreSQL URL: {e}"))?;
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(Duration::from_secs(10));
    }
    cfg.connect(postgres::NoTls).map_err(|e| format!("connecting to PostgreSQL: {e}"))
}
