//! Certificates for the `tcp_tls_*` tests, made on the spot with rcgen: a
//! CA, a server certificate for 127.0.0.1 and localhost, a client
//! certificate, an expired server certificate and an unrelated CA.

use dhp_core::transport::net::{ClientTls, ServerTls};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// What a [`TlsBed`] server speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Serve {
    Plaintext,
    /// `server.pem`, signed by `ca.pem`.
    Tls,
    /// `expired.pem` (valid only in 2020), signed by `ca.pem`.
    Expired,
    /// `server.pem`, demanding a client certificate signed by `ca.pem`.
    Mutual,
}

/// The `tcp_tls_*` setup: a temporary directory with the certificates
/// (`pki/`) and a `dhp transport` server writing `logs/`, its stderr
/// captured for its warnings.
pub struct TlsBed {
    pub tmp: tempfile::TempDir,
    pub pki: Pki,
    pub logs: PathBuf,
    pub srv: super::Server,
}

impl TlsBed {
    pub fn start(serve: Serve) -> TlsBed {
        let tmp = tempfile::tempdir().unwrap();
        let pki = Pki::new(&tmp.path().join("pki"));
        let logs = tmp.path().join("logs");
        let args = match serve {
            Serve::Plaintext => Vec::new(),
            Serve::Tls => pki.server_args(false, false),
            Serve::Expired => pki.server_args(true, false),
            Serve::Mutual => pki.server_args(false, true),
        };
        let srv = super::Server::start_capturing(&logs, &strs(&args), &tmp.path().join("server.err"));
        TlsBed { tmp, pki, logs, srv }
    }

    /// A synchronous shipper to the server with `tls` (None: plaintext).
    pub fn shipper(&self, tls: Option<ClientTls>) -> dhp_core::transport::net::TcpShipper {
        sync_shipper(&self.srv.addr(), tls)
    }

    /// `dhp work` on a fresh census (2..`hi`) in `root/`, shipping to the
    /// server with `flags` (TLS options, `--ship-mode`): its hid, and the
    /// run's (exit code, stdout JSON, stderr).
    pub fn work(&self, hi: u64, flags: &[&str], wait: Duration) -> (String, (i32, serde_json::Value, String)) {
        let root = self.root();
        let hid = super::census(&root, 2, hi, 100);
        let addr = self.srv.addr();
        let args: Vec<&str> = ["--ship-to", addr.as_str()].into_iter().chain(flags.iter().copied()).collect();
        let run = super::finish(super::spawn_work(&root, "w1", &hid, &args, &super::tok()), wait);
        (hid, run)
    }

    /// The store `work` runs on.
    pub fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// The server's log of `hid` ingests into the same rows as `root/`.
    pub fn assert_log_matches_store(&self, hid: &str) {
        super::assert_log_matches_store(&self.srv.log(hid), &self.root(), hid, &self.tmp.path().join("fresh"));
    }

    /// A shipper with `tls` is refused at the TLS layer: `Error::Tls`,
    /// promptly, a warning on the server, and nothing logged. Returns the
    /// error.
    pub fn refused(&self, tls: Option<ClientTls>) -> dhp_core::Error {
        let e = ship_fails(&self.srv.addr(), tls);
        assert!(matches!(e, dhp_core::Error::Tls { .. }), "{e:?}");
        await_tls_warning(&self.srv);
        assert_eq!(log_files(&self.logs), 0, "nothing may be logged");
        e
    }

    /// No TLS failure was logged by the server.
    pub fn assert_no_tls_failure(&self) {
        assert!(!self.srv.stderr_text().contains("TLS failed"), "{}", self.srv.stderr_text());
    }
}

/// A synchronous shipper to `addr` with the test token and `tls`.
pub fn sync_shipper(addr: &str, tls: Option<ClientTls>) -> dhp_core::transport::net::TcpShipper {
    use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
    let opts = ShipperOptions {
        token: super::TOKEN.into(),
        mode: ShipMode::Sync,
        call_timeout: Duration::from_secs(20),
        tls,
        ..Default::default()
    };
    TcpShipper::new(addr, opts).unwrap()
}

/// Ship an envelope through a shipper with `tls` (None: plaintext) and
/// return the error it must fail with, promptly (a TLS failure is not
/// retried until the call times out).
pub fn ship_fails(addr: &str, tls: Option<ClientTls>) -> dhp_core::Error {
    use dhp_core::transport::Shipper;
    let (env, hid) = super::envelope(0, 100);
    let mut sh = sync_shipper(addr, tls);
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
    dhp_testkit::wait_until(std::time::Duration::from_secs(10), "the server's TLS warning", || {
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
