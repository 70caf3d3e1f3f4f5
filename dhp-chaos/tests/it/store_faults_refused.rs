//! `lose-unsynced` and `kill-at-commit` are refused (exit 2, a clear
//! message) where they cannot run, before anything starts.
use crate::common::*;

#[test]
fn durability_and_at_commit_faults_are_refused_where_they_cannot_run() {
    let cases: [(&str, &[&str], &str); 4] = [
        ("lose-no-flag", &["--faults", "kill-worker=1,lose-unsynced=1"], "they need --lose-unsynced"),
        ("lose-store-disk", &["--lose-unsynced", "--store-disk", "16m"], "both mount a file system under the store"),
        (
            "lose-pg",
            &["--lose-unsynced", "--store", "postgres://u@127.0.0.1:1/x"],
            "does not apply to --store postgres",
        ),
        (
            "at-commit-no-audit",
            &["--faults", "kill-at-commit=1", "--no-audit"],
            "need a SQLite store with the audit on",
        ),
    ];
    for (name, args, want) in cases {
        let r = run_chaos(name, args);
        assert_eq!(r.code, 2, "{name}: {}", r.dump());
        assert!(r.stderr.contains(want), "{name}: {}", r.dump());
    }
}
