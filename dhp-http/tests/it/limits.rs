//! An over-large head is answered 431 and an over-large body 413, whether
//! declared (before it is sent) or chunked (cut at the limit).
use crate::server;
use dhp_http::Limits;
use dhp_kit::http_limits::{body_too_large_is_413, exchange, head_too_large_is_431};

#[test]
fn over_large_heads_and_bodies_are_refused() {
    let (addr, srv) = server(Limits::new("test"));
    head_too_large_is_431(addr, "/");
    body_too_large_is_413(addr, "/echo");
    // a head just under the limit and a body at it are served
    let pad = "x".repeat(15 * 1024);
    let ok =
        exchange(addr, format!("GET / HTTP/1.1\r\nHost: a\r\nX-Pad: {pad}\r\nConnection: close\r\n\r\n").as_bytes());
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok:.200}");
    let body = vec![b'y'; dhp_http::MAX_BODY];
    let mut req =
        format!("POST /echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: {}\r\n\r\n", body.len())
            .into_bytes();
    req.extend_from_slice(&body);
    let ok = exchange(addr, &req);
    assert!(ok.starts_with("HTTP/1.1 200 OK") && ok.ends_with(&format!("{} bytes", body.len())), "{ok:.200}");
    // chunked, without a declared length: cut at the limit
    let chunk = vec![b'z'; 64 * 1024];
    let mut req = b"POST /echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..(dhp_http::MAX_BODY / chunk.len() + 2) {
        req.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        req.extend_from_slice(&chunk);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let got = exchange(addr, &req);
    assert!(got.starts_with("HTTP/1.1 413"), "{got:.200}");
    srv.stop();
}
