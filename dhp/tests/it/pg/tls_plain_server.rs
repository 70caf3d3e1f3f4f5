//! TLS settings a server or a file cannot honour fail clearly (exit 11):
//! `sslmode=require` against a server without TLS, an `sslrootcert` that
//! does not exist or holds no certificate; `prefer` (the default) falls
//! back to plaintext there.
use crate::common::dhp;
use crate::pg_support::base_url;

fn dispatch(url: &str) -> (i32, String) {
    let (code, v, err) = dhp(&["dispatch", url, "--kind", "t", "--schema", "{}"], &[]);
    (code, format!("{v} {err}"))
}

#[test]
fn require_against_a_server_without_tls_fails_clearly() {
    // The shared test cluster has no TLS.
    let base = base_url();
    let (code, out) = dispatch(&format!("{base}?sslmode=require&schema=t_tls_plain"));
    assert_eq!(code, 11, "{out}");
    assert!(out.contains("StoreError") && out.contains("server does not support TLS"), "{out}");

    let (code, out) = dispatch(&format!("{base}?sslmode=prefer&schema=t_tls_plain_prefer"));
    assert_eq!(code, 0, "prefer falls back to plaintext: {out}");

    let (code, out) = dispatch(&format!("{base}?sslmode=verify-full&sslrootcert=/no/such/ca.pem&schema=t_tls_x"));
    assert_eq!(code, 11, "{out}");
    assert!(out.contains("ConfigError") && out.contains("sslrootcert /no/such/ca.pem"), "{out}");

    let empty = tempfile::NamedTempFile::new().unwrap();
    let (code, out) =
        dispatch(&format!("{base}?sslmode=verify-ca&sslrootcert={}&schema=t_tls_x", empty.path().display()));
    assert_eq!(code, 11, "{out}");
    assert!(out.contains("ConfigError") && out.contains("no PEM certificate"), "{out}");

    let (code, out) = dispatch(&format!("{base}?sslmode=verify-full&schema=t_tls_x"));
    assert_eq!(code, 11, "{out}");
    assert!(out.contains("ConfigError") && out.contains("need sslrootcert"), "{out}");
}
