//! Certificates for the `tcp_tls_*` tests, made on the spot with rcgen: a
//! CA, a server certificate for 127.0.0.1 and localhost, a client
//! certificate, an expired server certificate and an unrelated CA.

use dhp_core::transport::net::{ClientTls, ServerTls};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// PEM files in one directory.
pub struct Pki {
    pub dir: PathBuf,
}

struct Ca {
    cert: Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    Ca { cert: p.self_signed(&key).unwrap(), key }
}

/// A leaf signed by `ca`; `expired` makes it valid only in 2020.
fn leaf(ca: &Ca, name: &str, server: bool, expired: bool) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let sans = if server { vec!["localhost".to_string(), "127.0.0.1".to_string()] } else { Vec::new() };
    let mut p = CertificateParams::new(sans).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.extended_key_usages =
        vec![if server { ExtendedKeyUsagePurpose::ServerAuth } else { ExtendedKeyUsagePurpose::ClientAuth }];
    if expired {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2020, 12, 31);
    }
    let cert = p.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    /// Write every file under `dir` (created).
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let w = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
        let ca = ca("dhp test CA");
        w("ca.pem", &ca.cert.pem());
        let (c, k) = leaf(&ca, "dhp test server", true, false);
        w("server.pem", &c);
        w("server.key", &k);
        let (c, k) = leaf(&ca, "dhp test server (expired)", true, true);
        w("expired.pem", &c);
        w("expired.key", &k);
        let (c, k) = leaf(&ca, "dhp test client", false, false);
        w("client.pem", &c);
        w("client.key", &k);
        w("other-ca.pem", &ca_pem_only("some other CA"));
        Pki { dir: dir.to_path_buf() }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `dhp transport` flags for a server presenting `server.pem` (or
    /// `expired.pem`), demanding client certificates when `mutual`.
    pub fn server_args(&self, expired: bool, mutual: bool) -> Vec<String> {
        let (c, k) = if expired { ("expired.pem", "expired.key") } else { ("server.pem", "server.key") };
        let mut a = vec![
            "--tls-cert".to_string(),
            self.path(c).display().to_string(),
            "--tls-key".to_string(),
            self.path(k).display().to_string(),
        ];
        if mutual {
            a.push("--tls-client-ca".to_string());
            a.push(self.path("ca.pem").display().to_string());
        }
        a
    }

    pub fn server_tls(&self, mutual: bool) -> ServerTls {
        ServerTls {
            cert: self.path("server.pem"),
            key: self.path("server.key"),
            client_ca: mutual.then(|| self.path("ca.pem")),
        }
    }

    /// Shipper TLS trusting `ca` (a file name in the directory), with the
    /// client certificate when `with_cert`.
    pub fn client(&self, ca: &str, with_cert: bool) -> ClientTls {
        ClientTls {
            ca: self.path(ca),
            cert: with_cert.then(|| self.path("client.pem")),
            key: with_cert.then(|| self.path("client.key")),
        }
    }
}

fn ca_pem_only(name: &str) -> String {
    ca(name).cert.pem()
}

/// Strings of `refs` as `&str`s (for the `Server` helpers).
pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Ship an envelope through a shipper with `tls` (None: plaintext) and
/// return the error it must fail with, promptly (a TLS failure is not
/// retried until the call times out).
pub fn ship_fails(addr: &str, tls: Option<ClientTls>) -> dhp_core::Error {
    use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
    use dhp_core::transport::Shipper;
    let (env, hid) = super::envelope(0, 100);
    let mut sh = TcpShipper::new(
        addr,
        ShipperOptions {
            token: super::TOKEN.into(),
            mode: ShipMode::Sync,
            call_timeout: std::time::Duration::from_secs(20),
            tls,
            ..Default::default()
        },
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let e = sh.ship_envelope(&hid, &env).unwrap_err();
    eprintln!("shipper error: {e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "failing took {:?}: {e}", t0.elapsed());
    assert_eq!(e.kind(), "TransportError", "{e:?}");
    assert_eq!(e.exit_code(), 10);
    e
}

/// Wait for the server's warning about a failed TLS connection.
pub fn await_tls_warning(srv: &super::Server) {
    super::wait_until("the server's TLS warning", std::time::Duration::from_secs(10), || {
        let t = srv.stderr_text();
        t.contains("WARN") && t.contains("TLS failed")
    });
}

/// `<hid>.log` files in a server's log directory.
pub fn log_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "log"))
        .count()
}
