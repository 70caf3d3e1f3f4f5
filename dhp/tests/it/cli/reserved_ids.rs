//! Reserved (`__name__`, such as the orphan tombstone `__orphaned__`) and
//! confusable (`.`, `..`) worker and supervisor ids are refused with a
//! typed error before the store is touched (issue 11, item 9).
use crate::cli_support::*;
use crate::common;

#[test]
fn reserved_and_confusable_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    let before = common::dump(&root);
    for id in ["__orphaned__", "__x__", "__", ".", ".."] {
        let msg = failed(&run(&["work", r, "--runner", id, "claim", &hid], &[]), 3, "ValidationError");
        assert!(msg.contains("worker_id"), "{id}: {msg}");
        let msg = failed(&run(&["supervisor", r, id, "0"], &[]), 3, "ValidationError");
        assert!(msg.contains("reserved") || msg.contains("dots"), "{id}: {msg}");
        assert_eq!(before, common::dump(&root), "{id} changed the store");
    }
    // No liveness token was published under a reserved name.
    assert!(!root.join(dhp_core::liveness::DIR).join("__orphaned__.lock").exists());
    // Ordinary ids that merely contain underscores or dots still work.
    let ok = run(&["work", r, "--runner", "_w.1__x", "claim", &hid], &[]);
    assert_eq!(ok.code, 0, "{ok:?}");
}
