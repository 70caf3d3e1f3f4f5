//! `sslmode=require` against a server with TLS: the store works and its
//! connections are encrypted (the server's own `pg_stat_ssl` says so).
use crate::pg_support::{sql, Cluster};
use dhp_core::{Config, Runner};
use serde_json::json;

#[test]
fn require_connects_over_tls() {
    let c = Cluster::start_tls();
    let url = format!("{}?sslmode=require&application_name=dhp_tls_req&schema=t_tls_req", c.url);
    let r = Runner::open(&url, "w1", Config::default()).expect("open over TLS");
    let env = dhp_core::envelope::build("t", json!({}), json!({}), Default::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    assert_eq!(ctx.checkpoint(&json!({"i": 1})).unwrap(), 0);
    // The runner's connection is still open: ask the server how it came in.
    let ssl = sql(
        &c.url,
        "SELECT s.ssl::text || ' ' || s.version FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
         WHERE a.application_name = 'dhp_tls_req'",
    );
    assert!(!ssl.is_empty(), "no connection of the runner seen");
    for row in &ssl {
        let row = row.as_deref().unwrap_or_default();
        assert!(row.starts_with("true TLSv1."), "a plaintext connection: {row}");
    }
    drop(ctx);
    drop(r);
}
