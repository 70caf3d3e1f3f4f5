//! Every HTTP server of the `dhp` program is the one stack (dhp-http)
//! under its shared limits: an over-large head is 431, an over-large body
//! 413, and a connection over the cap 503 `busy` — or, for `--metrics`,
//! which makes room for a scrape, served.
use crate::a2a_support::{new_store, Server, SHORT};
use crate::dashboard_support::Dash;
use crate::metrics_support::{metrics_addr, Proc};
use dhp_testkit::http_limits::{body_too_large_is_413, head_too_large_is_431, over_the_cap};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

#[test]
fn every_server_refuses_over_large_requests_and_connections_alike() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());

    let a2a = Server::start(&root, &["--max-connections", "4", "--no-supervisor"], SHORT);
    let addr: SocketAddr = ([127, 0, 0, 1], a2a.port).into();
    head_too_large_is_431(addr, "/");
    body_too_large_is_413(addr, "/");
    drop(over_the_cap(addr, "/.well-known/agent-card.json", 4, false));

    let dash = Dash::start(&root, &[]);
    let addr: SocketAddr = ([127, 0, 0, 1], dash.port).into();
    head_too_large_is_431(addr, "/");
    body_too_large_is_413(addr, "/");
    drop(over_the_cap(addr, "/", dhp_http_cap(), false));

    let child = Command::new(crate::a2a_support::dhp_bin())
        .args(["supervisor", root.to_str().unwrap(), "sup", "300", "--metrics", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sup = Proc(child);
    let addr: SocketAddr = metrics_addr(sup.0.stderr.take().unwrap()).parse().unwrap();
    head_too_large_is_431(addr, "/metrics");
    body_too_large_is_413(addr, "/metrics");
    drop(over_the_cap(addr, "/metrics", dhp_http_cap() + 2, true));
}

/// dhp-http's shared cap under the descriptor limit, which the servers
/// (children of this test) inherit.
fn dhp_http_cap() -> usize {
    dhp_http::MAX_CONNECTIONS.min(dhp_http::descriptor_budget())
}
