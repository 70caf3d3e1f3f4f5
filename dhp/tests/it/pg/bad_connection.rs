//! Bad connection input for a PostgreSQL ROOT is a typed error (exit 11)
//! that names the problem, and nothing is written: wrong password, missing
//! database, missing schema (read-only command), a schema holding other
//! tables, a newer schema version, an unreachable host (bounded connect
//! timeout), a URL of another scheme.

use crate::common;
use crate::common::dhp;
use crate::pg_support::{base_url, fresh_url, sql, with_schema};
use std::time::{Duration, Instant};

const DISPATCH: &[&str] = &["--kind", "t", "--schema", "{}"];

fn dispatch(root: &str) -> (i32, serde_json::Value, String) {
    let mut args = vec!["dispatch", root];
    args.extend_from_slice(DISPATCH);
    dhp(&args, &[])
}

fn schema_exists(name: &str) -> bool {
    !sql(&base_url(), &format!("SELECT nspname FROM pg_namespace WHERE nspname = '{name}'")).is_empty()
}

/// Replace the password of `postgres://user:pw@host…`.
fn with_password(url: &str, pw: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (auth, host) = rest.split_once('@').expect("test URL has credentials");
    let user = auth.split(':').next().unwrap();
    format!("{scheme}://{user}:{pw}@{host}")
}

#[test]
fn wrong_password_is_a_typed_error() {
    let url = with_schema(&with_password(&base_url(), "not-the-password"), "t_wrong_pw");
    let (code, v, err) = dispatch(&url);
    assert_eq!(code, 11, "{v} {err}");
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(!err.contains("not-the-password"), "the password is never printed: {err}");
    assert!(!schema_exists("t_wrong_pw"));
}

#[test]
fn missing_database_is_a_typed_error() {
    let base = base_url();
    let (head, _) = base.rsplit_once('/').unwrap();
    let url = format!("{head}/no_such_db_here");
    let (code, _, err) = dispatch(&url);
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("database \"no_such_db_here\" does not exist"), "{err}");
}

#[test]
fn read_only_command_on_missing_schema_writes_nothing() {
    let url = fresh_url("missing");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    let (code, _, err) = dhp(&["status", &url], &[]);
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("no DHP store") && err.contains(&schema), "{err}");
    assert!(!schema_exists(&schema), "status must not create the schema");
}

#[test]
fn foreign_schema_is_refused_untouched() {
    let url = fresh_url("foreign");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    sql(&base_url(), &format!("CREATE SCHEMA {schema}; CREATE TABLE {schema}.invoices (id int)"));
    for (code, _, err) in [dispatch(&url), dhp(&["status", &url], &[])] {
        assert_eq!(code, 11, "{err}");
        assert!(err.contains("not a DHP store") && err.contains("invoices"), "{err}");
    }
    let tables = sql(&base_url(), &format!("SELECT tablename FROM pg_tables WHERE schemaname = '{schema}'"));
    assert_eq!(tables, vec![Some("invoices".to_string())], "nothing created next to a foreign table");
}

#[test]
fn newer_schema_version_is_refused_before_anything_is_touched() {
    let url = fresh_url("newer");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    let (code, _, err) = dispatch(&url);
    assert_eq!(code, 0, "{err}");
    sql(&base_url(), &format!("INSERT INTO {schema}.schema_version VALUES (4, 0); DROP TABLE {schema}.liveness"));
    let (code, _, err) = dispatch(&url);
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("schema v4 is newer"), "{err}");
    let count = sql(&base_url(), &format!("SELECT count(*) FROM {schema}.handoffs"));
    assert_eq!(count, vec![Some("1".to_string())], "no second handoff");
    let liveness =
        sql(&base_url(), &format!("SELECT 1 FROM pg_tables WHERE schemaname='{schema}' AND tablename='liveness'"));
    assert!(liveness.is_empty(), "no table (re)created in a newer store");
}

#[test]
fn unreachable_host_fails_within_the_connect_timeout() {
    // TEST-NET-3: routed nowhere, so the connection attempt hangs until
    // the timeout (or fails at once where there is no route at all).
    for (url, bound) in [
        ("postgres://u:p@203.0.113.7:5432/db?connect_timeout=1", Duration::from_secs(4)),
        ("postgres://u:p@203.0.113.7:5432/db", Duration::from_secs(9)),
    ] {
        let t = Instant::now();
        let (code, _, err) = dispatch(url);
        assert_eq!(code, 11, "{url}: {err}");
        assert!(t.elapsed() < bound, "{url}: took {:?}", t.elapsed());
        assert!(err.contains("cannot connect to PostgreSQL at 203.0.113.7:5432/db"), "{err}");
    }
}

#[test]
fn other_schemes_are_errors_not_directories() {
    let cwd = tempfile::tempdir().unwrap();
    for url in ["mysql://u:p@h/db", "postgres:relative", "sqlite:///x"] {
        let out = std::process::Command::new(common::dhp_bin())
            .args(["dispatch", url])
            .args(DISPATCH)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(11), "{url}: {err}");
        assert!(err.contains("store location"), "{err}");
    }
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "no directory named after a URL");
}
