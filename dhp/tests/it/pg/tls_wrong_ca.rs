//! `sslmode=verify-full` with a CA that did not sign the server's
//! certificate: a typed error (StoreError, exit 11) that names the
//! certificate problem, and nothing is written.
use crate::common::dhp;
use crate::pg_support::{sql, Cluster};

#[test]
fn verify_full_with_a_wrong_ca_fails_and_names_the_certificate() {
    let c = Cluster::start_tls();
    for mode in ["verify-full", "verify-ca", "require"] {
        let url = format!("{}?sslmode={mode}&sslrootcert={}&schema=t_tls_wrong", c.url, c.other_ca());
        let (code, v, err) = dhp(&["dispatch", &url, "--kind", "t", "--schema", "{}"], &[]);
        assert_eq!(code, 11, "{mode}: {v} {err}");
        assert!(err.contains("StoreError") && err.contains("cannot connect to PostgreSQL"), "{mode}: {err}");
        assert!(err.contains("certificate") && err.contains("UnknownIssuer"), "{mode}: {err}");
        assert!(!err.contains(c.url.split('@').next().unwrap_or("x")), "no password in: {err}");
    }
    let schemas = sql(&c.url, "SELECT nspname FROM pg_namespace WHERE nspname = 't_tls_wrong'");
    assert!(schemas.is_empty(), "nothing created: {schemas:?}");
}
