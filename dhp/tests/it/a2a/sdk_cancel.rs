//! CancelTask through the official SDK client: a waiting task and a running
//! one become CANCELED; the running worker is fenced off (its next write is
//! refused, it does not complete); a finished task is not cancelable; an
//! unknown id is TaskNotFound.
use crate::a2a_support::*;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn cancel_pending_running_terminal_and_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &[], SHORT);
    let root_s = root.to_str().unwrap();

    // Pending (no worker yet): canceled at once, and no worker can claim it.
    let (pending, hid_p) = submit(&srv.url, &census_task(0, 1_000, 100));
    let c = &sdk_ok(&srv.url, &["cancel", &pending])[0];
    assert_eq!(c["status"]["state"], "TASK_STATE_CANCELED", "{c}");
    let claim = Command::new(dhp_bin()).args(["work", root_s, "--runner", "late", "claim", &hid_p]).output().unwrap();
    assert!(!claim.status.success(), "a canceled handoff was claimed");

    // Running: the worker holding it loses its lease at its next write.
    let (running, hid_r) = submit(&srv.url, &census_task(0, 400_000, 10_000));
    let mut w = Command::new(dhp_bin())
        .args(["work", root_s, "--runner", "busy", "claim", &hid_r, "--pace", "0.2"])
        .envs(SHORT.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_status(&root, &hid_r, "2 checkpoints", Duration::from_secs(60), |v| {
        v["checkpoints"].as_u64().unwrap_or(0) >= 2
    });
    let c = &sdk_ok(&srv.url, &["cancel", &running])[0];
    assert_eq!(c["status"]["state"], "TASK_STATE_CANCELED", "{c}");
    let st = w.wait().unwrap();
    assert!(!st.success(), "the fenced-off worker exited 0");
    let after = wait_status(&root, &hid_r, "status", Duration::from_secs(5), |v| v.is_object());
    assert_eq!(after["status"], "failed");
    assert!(after.get("result").is_none(), "{after}");
    assert_eq!(sdk_ok(&srv.url, &["get", &running])[0]["status"]["state"], "TASK_STATE_CANCELED");

    // Terminal tasks are not cancelable (and stay as they were).
    let msg = sdk_err(&srv.url, &["cancel", &running], "TaskNotCancelableError");
    assert!(msg.contains("already failed"), "{msg}");

    // Unknown ids.
    sdk_err(&srv.url, &["cancel", "task-does-not-exist"], "TaskNotFoundError");
    sdk_err(&srv.url, &["get", "task-does-not-exist"], "TaskNotFoundError");
}
