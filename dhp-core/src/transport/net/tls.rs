//! TLS for the transport (rustls with the ring provider). Plaintext stays
//! the default: the reference speaks plaintext only.
//!
//! The server presents `--tls-cert`/`--tls-key` and, with
//! `--tls-client-ca`, demands a client certificate signed by that CA
//! (mutual TLS). The shipper trusts only the CA in `--tls-ca` (never the
//! system roots) and can present a client certificate.

use crate::error::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The server's TLS material (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTls {
    /// Certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key of the leaf certificate.
    pub key: PathBuf,
    /// When set, every client must present a certificate signed by one of
    /// these CAs.
    pub client_ca: Option<PathBuf>,
}

/// The shipper's TLS material (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTls {
    /// The CA(s) the server's certificate must chain to.
    pub ca: PathBuf,
    /// A client certificate chain and its key, for servers that demand one.
    pub cert: Option<PathBuf>,
    /// The private key of `cert`.
    pub key: Option<PathBuf>,
}

/// A TLS failure with what we were doing, keeping the source.
pub(crate) fn tls_error(context: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Tls { context: context.into(), source: Arc::new(source) }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Open a PEM file: one that is missing or unreadable is an
/// [`Error::Io`] naming it (an `IoError`, exit 11, as for every file a
/// command is given); what is in it is the TLS layer's to judge.
fn pem_file(path: &Path) -> Result<std::io::BufReader<std::fs::File>> {
    std::fs::File::open(path).map(std::io::BufReader::new).map_err(|e| Error::io(path, e))
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let what = || format!("reading certificates from {}", path.display());
    let certs = CertificateDer::pem_reader_iter(pem_file(path)?)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| tls_error(what(), e))?;
    if certs.is_empty() {
        return Err(tls_error(what(), pem_missing("no CERTIFICATE block")));
    }
    Ok(certs)
}

fn key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_reader(pem_file(path)?)
        .map_err(|e| tls_error(format!("reading a private key from {}", path.display()), e))
}

fn pem_missing(msg: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_string())
}

fn roots(path: &Path) -> Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for c in certs(path)? {
        roots.add(c).map_err(|e| tls_error(format!("CA certificate in {}", path.display()), e))?;
    }
    Ok(roots)
}

impl ServerTls {
    /// The rustls configuration; every file is read and checked here, so a
    /// bad file fails at start-up, not at the first handshake.
    pub(crate) fn config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error("TLS protocol versions", e))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let verifier =
                    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
                        .build()
                        .map_err(|e| tls_error(format!("client CA {}", ca.display()), e))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let cfg = builder.with_single_cert(certs(&self.cert)?, key(&self.key)?).map_err(|e| {
            tls_error(format!("certificate {} with key {}", self.cert.display(), self.key.display()), e)
        })?;
        Ok(Arc::new(cfg))
    }
}

impl ClientTls {
    pub(crate) fn config(&self) -> Result<Arc<rustls::ClientConfig>> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error("TLS protocol versions", e))?
            .with_root_certificates(roots(&self.ca)?);
        let cfg = match (&self.cert, &self.key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(c), Some(k)) => builder
                .with_client_auth_cert(certs(c)?, key(k)?)
                .map_err(|e| tls_error(format!("client certificate {} with key {}", c.display(), k.display()), e))?,
            _ => return Err(Error::config("a TLS client certificate needs both --tls-cert and --tls-key")),
        };
        Ok(Arc::new(cfg))
    }
}

/// The name the server's certificate must carry: the host of `HOST:PORT`
/// (an IP address is matched against the certificate's IP SANs).
pub(crate) fn server_name(addr: &str) -> Result<ServerName<'static>> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| tls_error(format!("server name {host:?}"), e))
}

/// The rustls error inside an I/O error, if any (a failed handshake, a
/// fatal alert from the peer).
pub(crate) fn rustls_cause(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
}

/// Does a peer's first byte open a TLS handshake record (a ClientHello
/// sent to a plaintext port)? JSON frames start with `{` or whitespace.
pub(crate) fn looks_like_tls(first: u8) -> bool {
    first == 0x16
}

/// Does a reply start with a TLS record (an alert or a handshake: the
/// server expects TLS and we spoke plaintext)?
pub(crate) fn is_tls_record(data: &[u8]) -> bool {
    matches!(data, [0x15 | 0x16, 0x03, ..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_come_from_the_address() {
        assert!(matches!(server_name("127.0.0.1:8471").unwrap(), ServerName::IpAddress(_)));
        assert!(matches!(server_name("[::1]:8471").unwrap(), ServerName::IpAddress(_)));
        assert!(matches!(server_name("localhost:1").unwrap(), ServerName::DnsName(_)));
    }

    #[test]
    fn missing_files_are_io_errors_naming_the_file() {
        // docs/cli.md: a PEM file that cannot be read is an IoError
        let t = ClientTls { ca: "/nonexistent/ca.pem".into(), cert: None, key: None };
        let e = t.config().unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn tls_records_are_recognised() {
        assert!(is_tls_record(&[0x15, 0x03, 0x03, 0, 2, 2, 50]));
        assert!(!is_tls_record(b"{\"ok\": true}"));
        assert!(looks_like_tls(0x16));
        assert!(!looks_like_tls(b'{'));
    }
}
