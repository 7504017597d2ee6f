//! The client's certificate check for `https://` servers: the system's trusted roots (the OS
//! store, as kubectl's Go client uses; `SSL_CERT_FILE`/`SSL_CERT_DIR` are honoured) plus the
//! certificates of `--certificate-authority` (context key `certificateAuthority`), checked by
//! rustls's WebPKI verifier, with one addition. Where the system has no store at all (a
//! scratch container), the built-in Mozilla roots stand in for it, so that public servers
//! still verify. A self-signed
//! certificate made the usual way (`openssl req -x509 ...`) is marked as a CA, and WebPKI
//! refuses a CA certificate presented as the server's own (`CaUsedAsEndEntity`) even when it
//! is exactly the certificate the user trusts; kubectl, curl and Go accept it. So when that is
//! the only objection and the server's certificate is byte for byte one of the file's
//! certificates, it is accepted once its names match the host (validity dates were checked by
//! WebPKI before it raised that objection).
//!
//! Owns: building that rustls configuration (and the one of `--insecure-skip-tls-verify` for
//! the gRPC transport, which has no reqwest to ask), and telling what a failed handshake
//! means. Must not: relax anything else (expiry, names, an unknown issuer stay errors) or
//! open connections.

use std::sync::Arc;

use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{self, CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::error::ClientError;

/// A rustls client configuration trusting the system roots plus `extra` (DER).
pub fn client_config(extra: &[Vec<u8>]) -> Result<rustls::ClientConfig, String> {
    verifying(extra, false)
}

/// A rustls client configuration that accepts any certificate (`--insecure-skip-tls-verify`,
/// already warned about by the command): the handshake's signatures are still checked, the
/// certificate's issuer, names and dates are not, as reqwest's `danger_accept_invalid_certs`.
pub fn insecure_config() -> Result<rustls::ClientConfig, String> {
    verifying(&[], true)
}

fn verifying(extra: &[Vec<u8>], accept_any: bool) -> Result<rustls::ClientConfig, String> {
    let provider = crate::tls::provider();
    let mut roots = system_roots();
    let pinned: Vec<CertificateDer<'static>> = extra.iter().map(|d| CertificateDer::from(d.clone())).collect();
    for cert in &pinned {
        roots
            .add(cert.clone())
            .map_err(|e| format!("a certificate authority is unusable: {e}"))?;
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let verifier = Verifier {
        inner,
        pinned,
        provider: provider.clone(),
        accept_any,
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// What a failed connection to `url` says about TLS, if anything: the rustls error somewhere
/// in the chain of `e`. An `io::Error` carries it as its payload (which may be another
/// `io::Error`), and its `source()` skips the payload, so payloads are followed instead.
pub(super) fn tls_failure(e: &(dyn std::error::Error + 'static), url: &str) -> Option<ClientError> {
    use rustls::{Error as Tls, InvalidMessage};
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let tls = loop {
        let err = cur?;
        if let Some(tls) = err.downcast_ref::<Tls>() {
            break tls;
        }
        cur = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    };
    let url = url.to_string();
    match tls {
        Tls::InvalidCertificate(CertificateError::UnknownIssuer) => Some(ClientError::Certificate {
            url,
            reason: "it is not signed by a certificate authority retryctl trusts (unknown issuer)".into(),
        }),
        // A trusted authority has the issuer's name but not its key: another CA of the same
        // name (a re-created test CA, an impostor) signed the certificate.
        Tls::InvalidCertificate(CertificateError::BadSignature) => Some(ClientError::Certificate {
            url,
            reason: "its signature does not match the key of the certificate authority of that name that retryctl trusts (bad signature): another authority with the same name signed it".into(),
        }),
        Tls::InvalidCertificate(_) if is_ca_used_as_end_entity(tls) => Some(ClientError::Certificate {
            url,
            reason: "it is self-signed (a CA certificate presented as the server's own) and not among the certificates retryctl trusts".into(),
        }),
        Tls::InvalidCertificate(_) => Some(ClientError::Certificate {
            url,
            reason: tls.to_string(),
        }),
        // The answer to the hello is not a TLS record: a plain HTTP server's 400.
        Tls::InvalidMessage(InvalidMessage::InvalidContentType) => {
            Some(ClientError::WrongScheme { url, server_tls: false })
        }
        _ => None,
    }
}

/// The OS store's roots. Certificates in it that do not parse are skipped, as Go's
/// `SystemCertPool` skips them; an empty or missing store falls back to the built-in roots.
fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    roots
}

#[derive(Debug)]
struct Verifier {
    inner: Arc<WebPkiServerVerifier>,
    /// The user's own certificates, compared byte for byte with the server's.
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
    /// `--insecure-skip-tls-verify`: any certificate (its signatures still checked).
    accept_any: bool,
}

/// Whether WebPKI's only objection is a CA certificate presented as the server's own.
pub(super) fn is_ca_used_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
        }
        _ => false,
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.accept_any {
            return Ok(ServerCertVerified::assertion());
        }
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(e) if is_ca_used_as_end_entity(&e) && self.pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) => {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
