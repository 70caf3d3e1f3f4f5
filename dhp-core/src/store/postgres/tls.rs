//! TLS to the database server with rustls (ring provider), for the
//! synchronous `postgres` client: a small `MakeTlsConnect` over
//! `tokio-rustls`, with libpq's `sslmode` semantics
//! ([`crate::store::location::SslMode`]):
//! - `disable`: no TLS (the client library never asks for it);
//! - `prefer`, `require`: TLS without certificate verification, as libpq
//!   (`prefer` falls back to plaintext when the server has no TLS; with an
//!   `sslrootcert`, `require` verifies the chain as `verify-ca`, as libpq);
//! - `verify-ca`: the chain must lead to a certificate of `sslrootcert`;
//!   the host name is not checked;
//! - `verify-full`: the chain and the host name (or IP address) are checked.
//!
//! The handshake signatures are always verified (so the server holds the
//! key of the certificate it presents). Channel binding is not offered.

use crate::error::{Error, Result};
use crate::store::location::{PgLocation, SslMode};
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The connector handed to `postgres::Config::connect`.
#[derive(Clone)]
pub struct MakeRustls {
    /// Built at open when the location verifies certificates (so a bad
    /// `sslrootcert` is refused at once); else at the first handshake: a
    /// server that declines TLS (the usual `prefer` against a plain server)
    /// costs no TLS set-up, whose code is a worker's program text.
    config: Arc<OnceLock<Arc<ClientConfig>>>,
}

impl std::fmt::Debug for MakeRustls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MakeRustls")
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Read `sslrootcert` into a root store; a missing file, a file without a
/// certificate or an unusable certificate is a `StoreLocation` error.
fn roots(loc: &PgLocation, path: &std::path::Path) -> Result<RootCertStore> {
    let bad = |reason: String| Error::StoreLocation { location: loc.to_string(), reason };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<std::result::Result<_, _>>())
        .map_err(|e| bad(format!("sslrootcert {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(bad(format!("sslrootcert {}: no PEM certificate in the file", path.display())));
    }
    let mut store = RootCertStore::empty();
    for c in certs {
        store.add(c).map_err(|e| bad(format!("sslrootcert {}: {e}", path.display())))?;
    }
    Ok(store)
}

impl MakeRustls {
    /// The TLS client for `loc` (its `sslmode` and `sslrootcert`).
    pub fn new(loc: &PgLocation) -> Result<Self> {
        let tls_err =
            |e: rustls::Error| Error::StoreLocation { location: loc.to_string(), reason: format!("TLS: {e}") };
        let verify = match (loc.sslmode, &loc.sslrootcert) {
            (SslMode::VerifyFull, Some(p)) => Some((p, true)),
            (SslMode::VerifyCa | SslMode::Require, Some(p)) => Some((p, false)),
            _ => None,
        };
        let config = Arc::new(OnceLock::new());
        if let Some((path, check_name)) = verify {
            let provider = provider();
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(loc, path)?), provider.clone())
                .build()
                .map_err(|e| Error::StoreLocation { location: loc.to_string(), reason: format!("TLS: {e}") })?;
            let built = client_config(Some(webpki), check_name, provider).map_err(tls_err)?;
            let _ = config.set(Arc::new(built));
        }
        Ok(MakeRustls { config })
    }
}

/// The client configuration of a certificate check (`None`: any certificate).
fn client_config(
    chain: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
    provider: Arc<CryptoProvider>,
) -> std::result::Result<ClientConfig, rustls::Error> {
    let verifier = Arc::new(Verifier { chain, check_name, provider: provider.clone() });
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The configuration, built now if it was left to the first handshake
/// (no certificate check: it depends on nothing but the provider).
fn config_of(slot: &OnceLock<Arc<ClientConfig>>) -> io::Result<Arc<ClientConfig>> {
    if let Some(c) = slot.get() {
        return Ok(c.clone());
    }
    let built = client_config(None, false, provider()).map_err(|e| io::Error::other(format!("TLS: {e}")))?;
    Ok(slot.get_or_init(|| Arc::new(built)).clone())
}

/// The server-certificate check of an `sslmode`. The handshake signatures
/// are verified with the provider's algorithms in every mode (webpki's own
/// verifier uses the same ones), so only the certificate check differs.
#[derive(Debug)]
struct Verifier {
    /// `verify-ca` / `verify-full` (and `require` with roots): webpki's
    /// chain check against the given roots. `None` (`prefer`, `require`
    /// without roots): any certificate, libpq's semantics (encryption, not
    /// authentication).
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// `verify-full`: the name must match too; `verify-ca` accepts a
    /// certificate whose only fault is the name.
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            // webpki checks the name only after the chain: a name error
            // means the chain is trusted.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    /// Called for every connection, before the client knows whether TLS
    /// will be used: a host that is no server name (`""` for a Unix
    /// socket, over which PostgreSQL never speaks TLS) fails only if a
    /// handshake is actually attempted.
    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_string()).map_err(|e| format!("host {domain:?}: {e}"));
        Ok(RustlsConnect { config: self.config.clone(), name })
    }
}

/// One handshake.
pub struct RustlsConnect {
    config: Arc<OnceLock<Arc<ClientConfig>>>,
    /// The name to verify, or why the host has none.
    name: std::result::Result<ServerName<'static>, String>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let connector = tokio_rustls::TlsConnector::from(config_of(&self.config)?);
            let name = self.name.map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            connector.connect(name, stream).await.map(RustlsStream)
        })
    }
}

/// The TLS stream the client library reads and writes.
pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
