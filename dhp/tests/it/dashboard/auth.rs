//! `dhp dashboard` authentication and origin checks (docs/dashboard.md,
//! "Security"): no token, a wrong token or a wrong cookie is refused; the
//! bearer token and the cookie `/login` sets are accepted; the token is
//! never printed; a foreign Host, Origin or `Sec-Fetch-Site` is refused
//! even with the right token; no response carries a CORS header; the
//! server refuses to start without a token or on a non-loopback address
//! unless told.
use crate::common::*;
use crate::dashboard_support::*;

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 6);
    dir
}

#[test]
fn token_refused_and_accepted() {
    let dir = store();
    let d = Dash::start(dir.path(), &["--log", "trace"]);
    let bearer = format!("Bearer {TOKEN}");
    for path in ["/", "/api/summary", "/api/handoffs", "/app.js", "/api/events"] {
        let r = d.request("GET", path, &[], "");
        assert_eq!(r.status, 401, "{path} without a token: {r:?}");
        assert!(!r.body.contains("\"counts\"") && !r.body.contains("handoff_id"), "{path} leaked: {}", r.body);
        let r = d.request("GET", path, &[("Authorization", "Bearer not-the-token")], "");
        assert_eq!(r.status, 401, "{path} with a wrong token");
        let r = d.request("GET", path, &[("Authorization", &format!("Bearer {TOKEN}x"))], "");
        assert_eq!(r.status, 401, "{path} with the token and one more character");
    }
    // the page itself offers a login form, not the data
    let r = d.request("GET", "/", &[], "");
    assert!(r.body.contains("<form method=\"post\" action=\"/login\""), "{}", r.body);
    let r = d.request("GET", "/api/summary", &[("Authorization", &bearer)], "");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("\"counts\""));

    // a wrong login sets no cookie
    let r = d.request("GET", "/login?token=wrong", &[], "");
    assert_eq!(r.status, 401);
    assert!(r.header("set-cookie").is_none());
    let r = d.request("POST", "/login", &[("Content-Type", "application/x-www-form-urlencoded")], "token=wrong");
    assert_eq!(r.status, 401);
    assert!(r.header("set-cookie").is_none());

    // the right one: a session cookie (not the token), and off to /
    let r = d.request("GET", &format!("/login?token={TOKEN}"), &[], "");
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(r.header("location"), Some("/"));
    let cookie = r.header("set-cookie").expect("a session cookie").to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains(TOKEN), "the cookie carries the token: {cookie}");
    let pair = cookie.split(';').next().unwrap().to_string();
    for path in ["/", "/api/summary", "/app.js"] {
        let r = d.request("GET", path, &[("Cookie", &pair)], "");
        assert_eq!(r.status, 200, "{path} with the cookie: {r:?}");
    }
    let head = events_until(d.port, &[("Cookie", &pair)], "event: summary");
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
    let r = d.request(
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &format!("token={TOKEN}"),
    );
    assert_eq!(r.status, 303);
    // a forged or altered cookie is refused
    let forged = format!("{}0", pair);
    assert_eq!(d.request("GET", "/api/summary", &[("Cookie", &forged)], "").status, 401);
    assert_eq!(
        d.request("GET", "/api/summary", &[("Cookie", &format!("dhp_dashboard_session={TOKEN}"))], "").status,
        401
    );

    let (code, out, err) = d.stop();
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains(TOKEN) && !err.contains(TOKEN), "the token was printed: {out}\n{err}");
    // the requests were logged (so the check above looked at real logs)
    assert!(err.contains("GET /login") && err.contains("POST /login"), "no request log at trace: {err}");
}

#[test]
fn cross_origin_refused() {
    let dir = store();
    let d = Dash::start(dir.path(), &[]);
    let bearer = format!("Bearer {TOKEN}");
    let own = format!("http://127.0.0.1:{}", d.port);
    let ok = d.request("GET", "/api/summary", &[("Authorization", &bearer), ("Origin", &own)], "");
    assert_eq!(ok.status, 200, "our own origin: {ok:?}");
    let ok = d.request("GET", "/api/summary", &[("Authorization", &bearer), ("Sec-Fetch-Site", "same-origin")], "");
    assert_eq!(ok.status, 200);
    let host = format!("localhost:{}", d.port);
    let ok = d.request("GET", "/api/summary", &[("Authorization", &bearer), ("Host", &host)], "");
    assert_eq!(ok.status, 200, "localhost names this server");
    let port = d.port.to_string();
    let evil_host = format!("evil.example:{port}");
    let wrong_port = format!("127.0.0.1:{}", d.port.wrapping_add(1));
    let other_port = format!("http://127.0.0.1:{}", d.port.wrapping_add(1));
    for (what, hdrs) in [
        ("a foreign Origin", vec![("Origin", "http://evil.example")]),
        ("our host on another port", vec![("Origin", other_port.as_str())]),
        ("an https Origin", vec![("Origin", "https://127.0.0.1")]),
        ("Origin null", vec![("Origin", "null")]),
        ("Sec-Fetch-Site cross-site", vec![("Sec-Fetch-Site", "cross-site")]),
        ("Sec-Fetch-Site same-site", vec![("Sec-Fetch-Site", "same-site")]),
        ("a rebinding Host", vec![("Host", evil_host.as_str())]),
        ("a Host with another port", vec![("Host", wrong_port.as_str())]),
    ] {
        for path in ["/api/summary", "/", &format!("/login?token={TOKEN}")] {
            let mut h = hdrs.clone();
            h.push(("Authorization", &bearer));
            let r = d.request("GET", path, &h, "");
            assert_eq!(r.status, 403, "{what} on {path}: {r:?}");
            assert!(r.header("set-cookie").is_none(), "{what}: a cookie was set");
        }
        let mut h = hdrs.clone();
        h.push(("Content-Type", "application/x-www-form-urlencoded"));
        let r = d.request("POST", "/login", &h, &format!("token={TOKEN}"));
        assert_eq!(r.status, 403, "{what}: POST /login");
    }
    // no CORS, ever: not on success, refusal or preflight
    let pre = d.request(
        "OPTIONS",
        "/api/summary",
        &[("Origin", "http://evil.example"), ("Access-Control-Request-Method", "GET")],
        "",
    );
    assert_eq!(pre.status, 403);
    for r in [ok, pre, d.request("GET", "/api/summary", &[("Authorization", &bearer), ("Origin", &own)], "")] {
        assert!(r.headers.iter().all(|(n, _)| !n.starts_with("access-control-")), "CORS header in {r:?}");
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
    }
    // writes are not served at all
    for m in ["POST", "PUT", "DELETE", "PATCH"] {
        assert_eq!(d.request(m, "/api/summary", &[("Authorization", &bearer)], "").status, 405, "{m}");
    }
}

#[test]
fn starts_only_with_a_token_and_on_loopback() {
    let dir = store();
    let root = dir.path().to_str().unwrap();
    let (code, v, err) = dhp(&["dashboard", root, "--port", "0"], &[("DHP_DASHBOARD_TOKEN", "")]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(v["error_kind"], "UsageError", "{v}");
    assert!(err.contains("needs a token"), "{err}");
    let (code, _, err) =
        dhp(&["dashboard", root, "--port", "0", "--host", "0.0.0.0"], &[("DHP_DASHBOARD_TOKEN", TOKEN)]);
    assert_ne!(code, 0);
    assert!(err.contains("--allow-remote") && err.starts_with("dhp: "), "{err}");
    assert!(!err.contains(TOKEN));
    let (code, _, err) = dhp(&["dashboard", root, "--port", "0", "--insecure-no-token", "--token", "x"], &[]);
    assert_eq!(code, 2, "{err}");
    // with --allow-remote it serves, Host checks still on
    let d = Dash::start(dir.path(), &["--host", "0.0.0.0", "--allow-remote"]);
    assert_eq!(d.get("/api/summary").status, 200);
    let evil = format!("evil.example:{}", d.port);
    assert_eq!(d.request("GET", "/api/summary", &[("Host", &evil)], "").status, 403);
    // a store that is not there
    let missing = dir.path().join("nope");
    let (code, _, err) =
        dhp(&["dashboard", missing.to_str().unwrap(), "--port", "0"], &[("DHP_DASHBOARD_TOKEN", TOKEN)]);
    assert_eq!(code, 11, "{err}");
}
