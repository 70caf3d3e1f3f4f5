//! A multi-host PostgreSQL ROOT (`host1:p1,host2:p2` with
//! `target_session_attrs=read-write`, as libpq takes it): `dhp` tries the
//! hosts in order and uses the first that accepts writes, so a client
//! follows the primary of a replicated cluster (dhp-chaos `--pg-cluster`
//! fails one over under running workers). When no host answers, the error
//! names every host it tried.

use crate::common::dhp;
use crate::pg_support::{base_url, with_schema};

/// A port on 127.0.0.1 nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// `postgres://user:pw@HOSTS/db?target_session_attrs=read-write&schema=…`
/// with HOSTS = `before` then the test server.
fn multi_host(before: &[u16], schema: &str) -> String {
    let url = base_url();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (auth, tail) = rest.split_once('@').expect("test URL has credentials");
    let (server, path) = tail.split_once('/').unwrap_or((tail, ""));
    let mut hosts: Vec<String> = before.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    hosts.push(server.to_string());
    let sep = if path.contains('?') { '&' } else { '?' };
    with_schema(&format!("{scheme}://{auth}@{}/{path}{sep}target_session_attrs=read-write", hosts.join(",")), schema)
}

#[test]
fn a_multi_host_root_uses_the_host_that_accepts_writes() {
    let schema = format!("t_multi_{}", std::process::id());
    let root = multi_host(&[closed_port()], &schema);
    let (code, v, err) = dhp(&["dispatch", &root, "--kind", "t", "--schema", "{}"], &[]);
    assert_eq!(code, 0, "{v} {err}");
    let (code, v, err) = dhp(&["status", &root], &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert!(v.to_string().contains("pending") || v.to_string().contains("\"t\""), "{v}");
}

#[test]
fn when_no_host_answers_the_error_names_every_host() {
    let (a, b) = (closed_port(), closed_port());
    let url = base_url();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (auth, _) = rest.split_once('@').expect("credentials");
    let root =
        format!("{scheme}://{auth}@127.0.0.1:{a},127.0.0.1:{b}/dhp?target_session_attrs=read-write&schema=t_none");
    let (code, v, err) = dhp(&["dispatch", &root, "--kind", "t", "--schema", "{}"], &[]);
    assert_eq!(code, 11, "{v} {err}");
    assert!(err.contains(&format!("127.0.0.1:{a},127.0.0.1:{b}/dhp")), "both hosts named: {err}");
    let pw = auth.split_once(':').map(|(_, p)| p).unwrap_or("");
    assert!(pw.is_empty() || !err.contains(pw), "the password is never printed: {err}");
}
