//! A store reached over a Unix socket, with libpq's conventions: a host
//! that starts with `/` (in `host=` or percent-encoded as the URL's host)
//! is the socket's directory, and `sslmode` is ignored there (PostgreSQL
//! has no TLS over a socket). scripts/pg.sh's cluster listens on a socket in
//! its directory with `trust` authentication, so this test starts its own
//! cluster to know that directory. A URL with no host at all is a clear
//! location error, never a TLS one.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};

fn percent_encode_path(p: &str) -> String {
    p.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn socket_urls_work_for_every_sslmode_and_both_spellings() {
    let c = pg_support::Cluster::start();
    let port = std::fs::read_to_string(format!("{}/port", c.dir)).unwrap().trim().to_string();
    let urls = [
        format!("postgres:///dhp?host={}&port={port}&user=postgres&sslmode=disable&schema=s_disable", c.dir),
        // the default sslmode (prefer) and require: ignored over a socket, as by libpq
        format!("postgres:///dhp?host={}&port={port}&user=postgres&schema=s_prefer", c.dir),
        format!("postgresql:///dhp?user=postgres&host={}&port={port}&sslmode=require&schema=s_require", c.dir),
        format!("postgres://postgres@{}:{port}/dhp?schema=s_encoded", percent_encode_path(&c.dir)),
    ];
    for url in &urls {
        let (code, v, err) = dhp(&["dispatch", url, "--census", "1000,3000,1000"], &[]);
        assert_eq!(code, 0, "{url}: {err}");
        let hid = v["hid"].as_str().unwrap().to_string();
        // A worker: its store connection, its liveness connection, heartbeats.
        let (code, _, err) = dhp(&["work", url, "--runner", "w1", "claim", &hid], &[]);
        assert_eq!(code, 0, "{url}: {err}");
        let r = Runner::open(url, "observer", Config::default()).unwrap();
        assert_eq!(r.status(&hid).unwrap()["status"], "completed", "{url}");
        // The same store over TCP: one store, whichever way it is reached.
        let schema = url.rsplit_once("schema=").unwrap().1;
        let tcp = pg_support::with_schema(&c.url, schema);
        let r = Runner::open(&tcp, "observer", Config::default()).unwrap();
        assert_eq!(r.status(&hid).unwrap()["status"], "completed", "{tcp}");
    }
}

#[test]
fn a_url_without_a_host_is_a_location_error() {
    for url in ["postgres:///dhp", "postgres:///dhp?sslmode=disable&user=postgres"] {
        let (code, v, err) = dhp(&["status", url], &[]);
        let said = format!("{v} {err}");
        assert_eq!(code, 11, "{url}: {said}");
        assert!(said.contains("names no host"), "{url}: {said}");
        assert!(!said.contains("TLS"), "{url}: {said}");
    }
}
