//! One HTTP stack (issue 46 item 3): no program of the workspace serves or
//! speaks HTTP by hand on `std::net`. Every server is dhp-http (axum/hyper)
//! and every client ureq; a source file whose non-test code both holds a
//! `std::net` socket (a `TcpListener` or `TcpStream`) and writes or reads
//! the HTTP/1 wire format (`HTTP/1.x` or a head's blank line as a literal)
//! fails this test, unless it is in [`ALLOWED`]. Tests (test files and
//! unit-test modules) keep their raw clients: they send what a real client
//! would not.

use std::path::{Path, PathBuf};

/// The files that may, and why.
const ALLOWED: &[(&str, &str)] = &[(
    "dhp-kit/src/http_limits.rs",
    "the probe of the shared limits sends over-large heads and bodies no real client would",
)];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | ".venv" | "node_modules" | "tests" | "fuzz") {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(p);
        }
    }
}

/// The code before a file's unit-test module, without comments.
fn non_test_code(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    lines[..end].iter().copied().filter(|l| !l.trim_start().starts_with("//")).collect()
}

/// Does this code hold a `std::net` socket and write or read HTTP/1 by hand?
fn hand_written_http(text: &str) -> bool {
    let code = non_test_code(text);
    let std_socket = code.iter().any(|l| {
        (l.contains("std::net::") && (l.contains("TcpListener") || l.contains("TcpStream")))
            || l.contains("std::net::TcpListener")
            || l.contains("std::net::TcpStream")
    });
    let wire = code.iter().any(|l| {
        let in_literal = |pat: &str| l.find(pat).is_some_and(|i| l[..i].contains('"'));
        in_literal("HTTP/1.") || l.contains(r"\r\n\r\n")
    });
    std_socket && wire
}

#[test]
fn no_http_is_written_by_hand_on_std_net() {
    let root = dhp_testkit::checkout();
    let mut all = vec![];
    sources(&root, &mut all);
    assert!(all.len() > 100, "the walk found the checkout's sources ({} files)", all.len());
    let mut found = vec![];
    for f in &all {
        let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy().into_owned();
        if ALLOWED.iter().any(|(a, _)| *a == rel) {
            continue;
        }
        if hand_written_http(&std::fs::read_to_string(f).unwrap_or_default()) {
            found.push(rel);
        }
    }
    assert!(found.is_empty(), "HTTP written by hand on std::net (serve it with dhp-http, ask with ureq): {found:#?}");
    for (a, _) in ALLOWED {
        assert!(root.join(a).is_file(), "{a} is allowed but gone: drop it from ALLOWED");
    }
}

#[test]
fn the_detector_sees_hand_written_servers_and_clients_only() {
    // a server as the metrics endpoint was written before dhp-http
    let server = "use std::net::{Shutdown, TcpListener, TcpStream};\n\
        fn reply(s: &mut TcpStream) {\n    let head = format!(\"HTTP/1.1 {status}\\r\\nContent-Length: {}\\r\\n\\r\\n\", n);\n}\n";
    assert!(hand_written_http(server));
    // a client as the workload service's was
    let client = "use std::net::{SocketAddr, TcpStream};\n\
        write!(c, \"GET /chunk?hid={hid} HTTP/1.1\\r\\nHost: {}\\r\\n\\r\\n\", h);\n";
    assert!(hand_written_http(client));
    // a head reader without the version literal
    let reader =
        "fn read_head(s: &std::net::TcpStream) {\n    while !buf.windows(4).any(|w| w == b\"\\r\\n\\r\\n\") {}\n}\n";
    assert!(hand_written_http(reader));
    // the same in a unit-test module, in comments, or on tokio: allowed
    let test_only = format!("fn f() {{}}\n#[cfg(test)]\nmod tests {{\n{server}}}\n");
    assert!(!hand_written_http(&test_only));
    let comment = "use std::net::TcpListener;\n//! plain HTTP/1.1 on the one stack\nfn f(l: TcpListener) {}\n";
    assert!(!hand_written_http(comment));
    let tokio = "use tokio::net::TcpStream;\nconst BUSY: &[u8] = b\"HTTP/1.1 503 Service Unavailable\\r\\n\\r\\n\";\n";
    assert!(!hand_written_http(tokio));
}
