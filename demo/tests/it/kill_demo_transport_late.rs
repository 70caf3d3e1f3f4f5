//! The kill demo with host B's transport server down when worker-A starts:
//! the synchronous TCP shipper keeps the lines in its local buffer,
//! reconnects with backoff until the server is up, and only then lets the
//! worker go on. The run still ends 60/60 with nothing lost on host B.

use crate::common;

#[test]
fn transport_down_at_start_then_up_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = 23;
    let down = 1.5;
    let r = common::run_demo(tmp.path(), seed, &["--transport-down-s", &down.to_string()]);
    common::check_green_run(&r, seed);
    let s = &r.summary;
    // The server really was down while worker-A was already shipping …
    let up_after = s["transport_started_after_worker_s"].as_f64().expect("transport start recorded");
    assert!(up_after >= down, "transport came up after {up_after}s");
    assert_eq!(s["pages_done_when_transport_started"], 0, "sync shipping: no page may outrun the peer");
    // … and worker-A waited it out in the shipper instead of failing.
    let waited = s["worker_a_start"]["peer_wait_s"].as_f64().expect("worker-A reports its wait");
    assert!(waited >= down - 0.5, "worker-A waited only {waited}s for host B");
    assert_eq!(s["worker_a_start"]["peer_acked_seq"], -1);
}
