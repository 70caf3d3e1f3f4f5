//! An approval row whose stored status is none of DHP's four (a foreign
//! or damaged store) is an error where it is read — waiting on it, the
//! handoff's status — never a panic and never taken for a decision.

use dhp_core::envelope;
use dhp_core::{Config, Error, Runner};
use serde_json::json;

#[test]
fn an_unknown_stored_approval_status_is_an_error_not_a_decision() {
    let dir = tempfile::tempdir().unwrap();
    let w = Runner::open(dir.path(), "w1", Config::default()).unwrap();
    let env = envelope::build("x", json!({}), json!({}), Default::default()).unwrap();
    let hid = w.dispatch(&env).unwrap();
    let ctx = w.claim(&hid).unwrap();
    let Err(Error::ApprovalRequired { approval_id, .. }) = ctx.request_approval("financial", &json!({"usd": 5}), 60.0)
    else {
        panic!("financial needs approval")
    };
    let db = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    db.execute("UPDATE approvals SET status = 'Approved' WHERE approval_id = ?1", [&approval_id]).unwrap();
    let e = ctx.await_approval(&approval_id, std::time::Duration::from_millis(1)).unwrap_err();
    assert!(e.to_string().contains("unknown approval status \"Approved\""), "{e}");
    assert!(w.status(&hid).is_err(), "the status lists the approvals: it cannot list this one");
    // A decision does not apply to it either: only a pending row moves.
    assert!(!w.decide_approval(&approval_id, true).unwrap());
    db.execute("UPDATE approvals SET status = 'pending' WHERE approval_id = ?1", [&approval_id]).unwrap();
    assert!(w.decide_approval(&approval_id, true).unwrap());
    ctx.await_approval(&approval_id, std::time::Duration::from_millis(1)).unwrap();
}
