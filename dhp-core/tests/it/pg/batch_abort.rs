//! A statement that fails inside a batch aborts the whole PostgreSQL
//! transaction. The batch must then fail as a whole — not report the items
//! before the failure as written while COMMIT silently rolls them back.

use crate::pg_support;

use dhp_core::runner::{checkpoint_many, CheckpointItem};
use dhp_core::{envelope, Config, Runner};
use serde_json::json;

#[test]
fn a_failed_statement_fails_the_whole_batch_and_writes_nothing() {
    let url = pg_support::fresh_url("batch_abort");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    let cfg = Config::default();
    let w = Runner::open(&url, "w1", cfg.clone()).unwrap();
    let hids: Vec<String> = (0..3)
        .map(|i| w.dispatch(&envelope::build("t", json!({"i": i}), json!({}), Default::default()).unwrap()).unwrap())
        .collect();
    let ctxs: Vec<_> = hids.iter().map(|h| w.claim(h).unwrap()).collect();
    // The server refuses the middle handoff's checkpoint (a stand-in for any
    // statement error: a constraint, a full disk, a deadlock).
    pg_support::sql(
        &url,
        &format!(
            "CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.hid = '{}' THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON {schema}.checkpoints FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()",
            hids[1]
        ),
    );
    let items: Vec<_> = ctxs
        .iter()
        .map(|c| CheckpointItem { hid: c.hid().into(), holder: "w1".into(), fence: c.fence(), state: json!({"k": 1}) })
        .collect();
    let out = checkpoint_many(w.store().as_ref(), &cfg, &items);
    let written: Vec<usize> = hids.iter().map(|h| w.checkpoints(h).unwrap().len()).collect();
    match &out {
        Ok(results) => {
            for (r, n) in results.iter().zip(&written) {
                assert_eq!(r.is_ok(), *n == 1, "reported {results:?} but the store holds {written:?}");
            }
            panic!("a batch with a failed statement reported per-item results: {results:?}");
        }
        Err(e) => assert_eq!(e.exit_code(), 11, "a typed store error: {e}"),
    }
    assert_eq!(written, vec![0, 0, 0], "nothing of the aborted transaction is in the store");
    // The connection is clean afterwards: the next transaction works.
    ctxs[0].checkpoint(&json!({"after": true})).unwrap();
}
