use super::*;
use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

fn get_as(url: &str, target: &str, cred: Option<&str>) -> (u16, Value) {
    let addr = url.trim_start_matches("http://");
    let mut c = TcpStream::connect(addr).unwrap();
    let auth = cred.map(|c| format!("Authorization: Bearer {c}\r\n")).unwrap_or_default();
    write!(c, "GET {target} HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\n").unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    let status: u16 = text[9..12].parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    (status, serde_json::from_str(body).unwrap())
}

const H: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

#[test]
fn serves_checks_and_records_every_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: Tasks = [(H.to_string(), (0, 250, 100))].into();
    let svc = Service::start(TcpListener::bind("127.0.0.1:0").unwrap(), tasks, dir.path()).unwrap();
    let cred = svc.credential_for("w1");
    let get = |url: &str, target: &str| get_as(url, target, Some(&cred));
    let (st, a) = get(svc.url(), &format!("/chunk?hid={H}&n=0&end=100&holder=w1&fence=3"));
    assert_eq!(st, 200);
    assert_eq!((a["count"].as_u64(), a["sum"].as_u64()), (Some(25), Some(1060)));
    // escaped as Python's urlencode may write it
    let (_, b) = get(svc.url(), &format!("/chunk?hid={H}&n=200&end=250&holder=w%31&fence=3"));
    assert_ne!(a["stamp"], b["stamp"], "every answer gets its own stamp");
    // refused: not a chunk boundary, a short last chunk claimed long, unknown hid, bad fence
    for bad in [
        format!("/chunk?hid={H}&n=50&end=150&holder=w1&fence=3"),
        format!("/chunk?hid={H}&n=200&end=300&holder=w1&fence=3"),
        "/chunk?hid=bbbb&n=0&end=100&holder=w1&fence=3".to_string(),
        format!("/chunk?hid={H}&n=0&end=100&holder=w1&fence=x"),
        format!("/chunk?hid={H}&n=0&end=100&fence=1"),
    ] {
        assert_eq!(get(svc.url(), &bad).0, 400, "{bad}");
    }
    assert_eq!(get(svc.url(), "/other").0, 404);
    drop(svc);
    let w = load(dir.path()).unwrap().unwrap();
    assert_eq!(w.served.len(), 2);
    assert_eq!(w.refused.len(), 5);
    let s = w.by_stamp(a["stamp"].as_str().unwrap()).unwrap();
    assert_eq!((s.hid.as_str(), s.n, s.end, s.holder.as_str(), s.fence), (H, 0, 100, "w1", 3));
    assert_eq!(w.by_stamp(b["stamp"].as_str().unwrap()).unwrap().holder, "w1");
    assert!(w.by_stamp("0000").is_none());
    assert_eq!(unescape("a%2Eb+c%zz%4"), "a.b c%zz%4");
    assert!(load(&dir.path().join("none")).unwrap().is_none());
}

/// Issue 47 item 2: a request without the asker's credential, with an
/// unknown one, or naming another holder than its credential's, is
/// refused and recorded as refused; the record says who really asked.
#[test]
fn only_a_holders_own_credential_asks_in_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: Tasks = [(H.to_string(), (0, 250, 100))].into();
    let svc = Service::start(TcpListener::bind("127.0.0.1:0").unwrap(), tasks, dir.path()).unwrap();
    let (w0, w1) = (svc.credential_for("w0001-h0"), svc.credential_for("w0002-h0"));
    assert_ne!(w0, w1);
    assert!(w0.len() >= 32, "unguessable: {w0}");
    let q = |holder: &str| format!("/chunk?hid={H}&n=0&end=100&holder={holder}&fence=0");
    assert_eq!(get_as(svc.url(), &q("w0001-h0"), None).0, 403, "no credential");
    assert_eq!(get_as(svc.url(), &q("w0001-h0"), Some("00112233445566778899aabbccddeeff")).0, 403, "unknown");
    let (st, e) = get_as(svc.url(), &q("w0001-h0"), Some(&w1));
    assert_eq!(st, 403, "w0002-h0 framing w0001-h0: {e}");
    assert!(e["error"].as_str().unwrap().contains("w0002-h0"), "{e}");
    let (st, ok) = get_as(svc.url(), &q("w0001-h0"), Some(&w0));
    assert_eq!(st, 200, "{ok}");
    drop(svc);
    let w = load(dir.path()).unwrap().unwrap();
    assert_eq!(w.served.len(), 1);
    assert_eq!(w.served[0].holder, "w0001-h0");
    assert_eq!(w.refused.len(), 3, "{:?}", w.refused);
    let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
    assert!(text.contains("\"by\":\"w0002-h0\"") && text.contains("\"asked_as\":\"w0001-h0\""), "{text}");
    assert!(text.contains("\"by\":\"w0001-h0\""), "the served line says who asked: {text}");
}

/// Issue 47 item 7: a client trickling its request head is cut at the
/// deadline, and a real request is served meanwhile.
#[test]
fn a_trickled_head_is_cut_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: Tasks = [(H.to_string(), (0, 250, 100))].into();
    let svc = Service::start(TcpListener::bind("127.0.0.1:0").unwrap(), tasks, dir.path()).unwrap();
    let cred = svc.credential_for("w1");
    let addr = svc.url().trim_start_matches("http://").to_string();
    let a2 = addr.clone();
    let trickler = std::thread::spawn(move || {
        let mut c = TcpStream::connect(&a2).unwrap();
        let t0 = std::time::Instant::now();
        for b in b"GET /chunk?hid=x HTTP/1.1\r\nHost: a\r\nX-Slow: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n" {
            if c.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut rest = String::new();
        let _ = c.read_to_string(&mut rest);
        (t0.elapsed(), rest)
    });
    std::thread::sleep(Duration::from_millis(300));
    let (st, _) = get_as(svc.url(), &format!("/chunk?hid={H}&n=0&end=100&holder=w1&fence=0"), Some(&cred));
    assert_eq!(st, 200, "served while another client trickles");
    let (took, rest) = trickler.join().unwrap();
    assert!(took < IO_TIMEOUT + Duration::from_secs(2), "the trickler held its connection {took:?}: {rest:?}");
}
