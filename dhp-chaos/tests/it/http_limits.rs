//! dhp-chaos's HTTP servers — the workload service and the `--dashboard`
//! live page — are the project's one stack (dhp-http) under its shared
//! limits, like every server: an over-large head is 431, an over-large
//! body 413, and a connection over the cap 503 `busy`, all before the
//! service records anything or the dashboard's guard looks at a request.
use dhp_chaos::site::dashboard::Dashboard;
use dhp_chaos::site::guard::Guard;
use dhp_chaos::workload::{load, Service, Tasks};
use dhp_kit::http_limits::{body_too_large_is_413, head_too_large_is_431, over_the_cap};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn cap() -> usize {
    dhp_http::MAX_CONNECTIONS.min(dhp_http::descriptor_budget())
}

#[test]
fn the_workload_service_and_the_dashboard_refuse_like_every_server() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: Tasks = [("a".repeat(64), (0, 100, 10))].into();
    let svc = Service::start(TcpListener::bind("127.0.0.1:0").unwrap(), tasks, dir.path()).unwrap();
    let addr = svc.url().trim_start_matches("http://").parse().unwrap();
    let chunk = format!("/chunk?hid={}&n=0&end=10&holder=w1&fence=0", "a".repeat(64));
    head_too_large_is_431(addr, &chunk);
    body_too_large_is_413(addr, &chunk);
    drop(over_the_cap(addr, &chunk, cap(), false));
    drop(svc);
    let w = load(dir.path()).unwrap().unwrap();
    assert!(w.served.is_empty() && w.refused.is_empty(), "the refused requests reached the record");

    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let d = Dashboard::new(dir.path(), Guard::new(&[], None));
    let stop = Arc::new(AtomicBool::new(false));
    let (d2, stop2) = (Arc::clone(&d), Arc::clone(&stop));
    let served = std::thread::spawn(move || d2.run(l, stop2));
    head_too_large_is_431(addr, "/state.json");
    body_too_large_is_413(addr, "/state.json");
    drop(over_the_cap(addr, "/state.json", cap(), false));
    stop.store(true, Ordering::SeqCst);
    served.join().unwrap().unwrap();
}
