//! Only `dispatch`, `ingest` and `resume` may create a store, and only in
//! an existing empty directory or with `--create`; every other command on a
//! missing ROOT fails without creating anything, and an empty or foreign
//! `dhp.sqlite3` is refused, never re-initialised (issue 11, item 7).
use crate::cli_support::*;
use crate::common;

#[test]
fn read_only_and_worker_commands_never_create_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo");
    let m = missing.to_str().unwrap();
    let hid = "a".repeat(64);
    for args in [
        vec!["status", m],
        vec!["status", m, &hid],
        vec!["ack", m, &hid],
        vec!["decide", m, "apr-1", "approve"],
        vec!["suspend", m, &hid, "-o", "/dev/null"],
        vec!["work", m, "--runner", "w1", "claim", &hid],
        vec!["supervisor", m, "sup", "0"],
    ] {
        let msg = failed(&run(&args, &[]), 11, "StoreError");
        assert!(msg.contains("no DHP store") && msg.contains("no such directory"), "{args:?}: {msg}");
        assert!(!missing.exists(), "{args:?} created {m}");
    }
    let r = run(&["--json", "status", m], &[]);
    failed_json(&r, 11, "StoreError");
}

#[test]
fn creating_commands_need_an_empty_dir_or_create() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("mistyped");
    let m = missing.to_str().unwrap();
    // A mistyped path is not silently turned into a new store tree.
    let msg = failed(&run(&["dispatch", m, "--census", "0,100,10"], &[]), 11, "StoreError");
    assert!(msg.contains("no such directory"), "{msg}");
    assert!(!missing.exists());
    // A non-empty directory without a store is not one either.
    let busy = dir.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let msg = failed(&run(&["dispatch", busy.to_str().unwrap(), "--census", "0,100,10"], &[]), 11, "StoreError");
    assert!(msg.contains("--create"), "the message says how to create one: {msg}");
    assert!(!busy.join("dhp.sqlite3").exists());
    // An existing empty directory: the user made it for this.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(run(&["dispatch", empty.to_str().unwrap(), "--census", "0,100,10"], &[]).code, 0);
    assert!(empty.join("dhp.sqlite3").is_file());
    // --create makes the directory too, and is idempotent.
    for _ in 0..2 {
        assert_eq!(run(&["dispatch", "--create", m, "--census", "0,100,10"], &[]).code, 0);
    }
    assert_eq!(run(&["--json", "status", m], &[]).json()["handoffs"].as_array().map(Vec::len), Some(2));
    // Nothing is left behind by the atomic creation.
    let names: Vec<String> =
        std::fs::read_dir(&missing).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.starts_with(".dhp.sqlite3.new-")), "{names:?}");
}

#[test]
fn ingest_and_resume_without_create_refuse_a_missing_root() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let m = missing.to_str().unwrap();
    let log = dir.path().join("x.log");
    std::fs::write(&log, "").unwrap();
    failed(&run(&["ingest", m, log.to_str().unwrap()], &[]), 11, "StoreError");
    let bundle = dir.path().join("b.json");
    std::fs::write(&bundle, r#"{"dhp_bundle": "1.0"}"#).unwrap();
    failed(&run(&["resume", m, bundle.to_str().unwrap()], &[]), 11, "StoreError");
    assert!(!missing.exists());
}

#[test]
fn an_empty_or_foreign_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    std::fs::create_dir(&root).unwrap();
    let db = root.join("dhp.sqlite3");
    let r = root.to_str().unwrap();

    // Zero bytes (a truncated store, or `> dhp.sqlite3`).
    std::fs::write(&db, "").unwrap();
    for args in
        [vec!["status", r], vec!["dispatch", "--create", r, "--census", "0,100,10"], vec!["supervisor", r, "s", "0"]]
    {
        let msg = failed(&run(&args, &[]), 11, "StoreError");
        assert!(msg.contains("empty"), "{args:?}: {msg}");
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "{args:?} re-initialised an empty store");
    }

    // Not SQLite at all.
    std::fs::write(&db, "hello, not a database, but long enough to have a header ..................................")
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let msg = failed(&run(&["dispatch", r, "--census", "0,100,10"], &[]), 11, "StoreError");
    assert!(msg.contains("not an SQLite database"), "{msg}");
    assert_eq!(before, std::fs::read(&db).unwrap());

    // Another program's SQLite database.
    std::fs::remove_file(&db).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (42);").unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let msg = failed(&run(&["dispatch", "--create", r, "--census", "0,100,10"], &[]), 11, "StoreError");
    assert!(msg.contains("not a DHP store"), "{msg}");
    assert_eq!(before, std::fs::read(&db).unwrap(), "a foreign database was modified");
    assert!(!root.join("dhp.sqlite3-wal").exists());
}

#[test]
fn an_existing_store_is_opened_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let before = common::dump(&root);
    let r = run(&["--json", "status", root.to_str().unwrap(), &hid], &[]);
    assert_eq!((r.code, r.json()["status"].as_str()), (0, Some("pending")), "{r:?}");
    assert_eq!(before, common::dump(&root), "status changed the store");
}
