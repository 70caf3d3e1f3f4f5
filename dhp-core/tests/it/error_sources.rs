//! Errors keep what caused them (issue 12, item 6): a JSON, bundle-tamper,
//! configuration or database failure carries the underlying error as its
//! `source()`, database failures are one engine-neutral `Error::Store`
//! whose kind drives `concerns_one_row`, and the kind names, exit codes and
//! messages the `dhp` command line documents stay what they were.

use dhp_core::error::BoxError;
use dhp_core::{envelope, json, Config, Error, Runner, StoreErrorKind};
use serde_json::json;
use std::error::Error as _;

#[test]
fn bad_json_keeps_the_parser_error() {
    let e = json::parse("{\"a\": ").unwrap_err();
    assert!(matches!(e, Error::Json { .. }), "{e:?}");
    assert_eq!((e.kind(), e.exit_code()), ("ValidationError", 3));
    let src = e.source().expect("the parser's error is kept");
    assert!(src.downcast_ref::<serde_json::Error>().is_some(), "{src:?}");
    assert!(e.to_string().starts_with("bad JSON: EOF while parsing"), "{e}");
}

#[test]
fn a_tampered_bundle_envelope_keeps_the_inner_tamper_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w1", Config::default()).unwrap();
    let env = envelope::build("t", json!({"inline": {"n": 1}}), json!({}), Default::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let _ctx = r.claim(&hid).unwrap();
    let mut bundle: serde_json::Value = serde_json::from_slice(&r.suspend(&hid).unwrap()).unwrap();
    bundle["envelope"]["task"]["inputs"] = json!({"inline": {"n": 2}});
    let other = tempfile::tempdir().unwrap();
    let r2 = Runner::open(other.path(), "w2", Config::default()).unwrap();
    let e = r2.resume(&serde_json::to_vec(&bundle).unwrap()).unwrap_err();
    assert!(matches!(e, Error::Tamper { .. }), "{e:?}");
    assert_eq!((e.kind(), e.exit_code()), ("TamperError", 8));
    assert!(e.to_string().starts_with("tampered or corrupt: bundle envelope: "), "{e}");
    let inner = e.source().and_then(|s| s.downcast_ref::<Error>()).expect("the envelope's own error is the source");
    assert!(matches!(inner, Error::Tamper { source: None, .. }), "{inner:?}");
}

#[test]
fn a_bad_setting_keeps_the_parse_error() {
    let e = Config::from_lookup(|k| (k == "DHP_LEASE_MAX_MISSED").then(|| "three".to_string())).unwrap_err();
    assert!(matches!(e, Error::Config { .. }), "{e:?}");
    assert_eq!((e.kind(), e.exit_code()), ("ConfigError", 11));
    assert!(e.to_string().contains("DHP_LEASE_MAX_MISSED"), "{e}");
    assert!(e.source().is_some_and(|s| s.is::<std::num::ParseIntError>()), "{e:?}");
}

#[test]
fn an_unreachable_postgres_is_an_engine_neutral_connection_error() {
    // Port 1 on loopback: refused at once, no server needed.
    let e = Runner::open("postgres://u:secret@127.0.0.1:1/db?connect_timeout=2", "w1", Config::default()).unwrap_err();
    let Error::Store { kind, ref context, .. } = e else { panic!("{e:?}") };
    assert_eq!(kind, StoreErrorKind::Connection);
    assert!(context.starts_with("cannot connect to PostgreSQL at 127.0.0.1:1"), "{context}");
    assert_eq!((e.kind(), e.exit_code(), e.store_kind()), ("StoreError", 11, Some(StoreErrorKind::Connection)));
    assert!(!e.concerns_one_row(), "a lost server stops a scan");
    assert!(!e.to_string().contains("secret"), "{e}");
    assert!(e.source().is_some_and(|s| s.is::<postgres::Error>()), "{e:?}");
}

#[test]
fn sqlite_failures_are_classified_without_naming_the_engine() {
    // A statement on a file that is not a database: store-wide, corrupt.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.db");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let e = Error::from(conn.execute_batch("SELECT * FROM sqlite_master").unwrap_err());
    assert_eq!(e.store_kind(), Some(StoreErrorKind::Corrupt), "{e:?}");
    assert!(!e.concerns_one_row());
    assert_eq!((e.kind(), e.exit_code()), ("StoreError", 11));
    assert!(e.to_string().starts_with("store: "), "{e}");

    // A value that cannot be read as its column's type: that row only.
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let bad: rusqlite::Error = conn.query_row("SELECT 'x'", [], |r| r.get::<_, i64>(0)).unwrap_err();
    let e = Error::from(bad);
    assert_eq!(e.store_kind(), Some(StoreErrorKind::Other), "{e:?}");
    assert!(e.concerns_one_row());
    assert!(e.source().is_some_and(|s| s.is::<rusqlite::Error>()));
}

#[test]
fn boxed_sources_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Error>();
    assert_send_sync::<BoxError>();
}
