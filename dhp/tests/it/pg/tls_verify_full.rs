//! `sslmode=verify-full` (and `verify-ca`) with the CA that signed the
//! server's certificate: the store works, by IP address and by host name
//! (the certificate names both). At an address the certificate does not
//! name, `verify-full` refuses (exit 11, naming the problem) and
//! `verify-ca`, which checks only the chain, connects.
use crate::common::dhp;
use crate::pg_support::Cluster;

#[test]
fn verify_full_with_the_right_ca_works() {
    let c = Cluster::start_tls();
    let by_name = c.url.replace("@127.0.0.1:", "@localhost:");
    for (i, (base, mode)) in
        [(&c.url, "verify-full"), (&by_name, "verify-full"), (&c.url, "verify-ca")].into_iter().enumerate()
    {
        let url = format!("{base}?sslmode={mode}&sslrootcert={}&schema=t_tls_vf{i}", c.ca());
        let (code, v, err) = dhp(&["dispatch", &url, "--kind", "t", "--schema", "{}"], &[]);
        assert_eq!(code, 0, "{mode} via {base}: {v} {err}");
        let hid = v["hid"].as_str().expect("a hid").to_string();
        let (code, v, err) = dhp(&["status", &url, &hid], &[]);
        assert_eq!((code, v["status"].as_str()), (0, Some("pending")), "{v} {err}");
    }
    let unnamed = c.url.replace("@127.0.0.1:", "@127.0.0.2:");
    let url = format!("{unnamed}?sslmode=verify-full&sslrootcert={}&schema=t_tls_vf_unnamed", c.ca());
    let (code, v, err) = dhp(&["dispatch", &url, "--kind", "t", "--schema", "{}"], &[]);
    assert_eq!(code, 11, "{v} {err}");
    assert!(err.contains("certificate not valid for name"), "{err}");
    let url = format!("{unnamed}?sslmode=verify-ca&sslrootcert={}&schema=t_tls_vf_unnamed", c.ca());
    let (code, v, err) = dhp(&["dispatch", &url, "--kind", "t", "--schema", "{}"], &[]);
    assert_eq!(code, 0, "verify-ca does not check the name: {v} {err}");
}
