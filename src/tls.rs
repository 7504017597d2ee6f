//! TLS files (PEM): the certificate chain and private key `serve` presents
//! (`--tls-cert`/`--tls-key`), and the extra roots the client trusts
//! (`--certificate-authority`, context key `certificateAuthority`).
//!
//! Owns: reading and checking those files into rustls types, with errors that name the file,
//! the words of the plain-HTTP-on-a-TLS-port answer, and the one crypto provider (rustls with ring, already in the tree through reqwest; no
//! OpenSSL). Must not: open connections, print, or decide how verification is relaxed (the
//! client and the server do).
//!
//! Decision the design leaves open: a TLS file that cannot be read, holds no usable PEM, or
//! (for `serve`) a key that does not match the certificate is invalid input, exit 3, for
//! every TLS file alike, so a script can tell "fix the file" from "fix the command line" (2).

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::CliError;

/// The body of `serve`'s 400 to plain HTTP on its TLS port, worded as Go's `net/http`
/// (Armada's own server) words it, so that the client recognises both.
pub const PLAIN_HTTP_ON_TLS: &str = "Client sent an HTTP request to an HTTPS server.\n";

/// rustls with ring, chosen explicitly rather than through the process-wide default, which
/// would panic if another crate ever enabled a second provider.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

// `what` names the file in messages, path included (`` `--tls-cert` file `cert.pem` ``).
fn read(path: &Path, what: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::invalid(format!("cannot read {what}: {}", crate::input::io_reason(&e))))
}

/// Every `CERTIFICATE` block of the file, in order; at least one. `what` names the file in
/// messages, path included.
pub fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, CliError> {
    let pem = read(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::invalid(format!("{what} is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(CliError::invalid(format!(
            "{what} holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)"
        )));
    }
    Ok(certs)
}

/// The first private key of the file (PKCS#8, PKCS#1 or SEC1).
pub fn private_key(path: &Path, what: &str) -> Result<PrivateKeyDer<'static>, CliError> {
    let pem = read(path, what)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => CliError::invalid(format!(
            "{what} holds no PEM private key (`-----BEGIN PRIVATE KEY-----`)"
        )),
        e => CliError::invalid(format!("{what} is not valid PEM: {e}")),
    })
}

/// The server side of `serve --tls-cert CERT --tls-key KEY`: HTTP/1.1 only (ALPN), no client
/// certificates.
pub fn server_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, CliError> {
    let chain = certificates(cert, &format!("`--tls-cert` file `{}`", cert.display()))?;
    let private = private_key(key, &format!("`--tls-key` file `{}`", key.display()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| CliError::failed(format!("cannot set up TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            let why = match e {
                rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                    "the key is not the certificate's (their public keys differ)".to_string()
                }
                e => lower_first(&e.to_string()),
            };
            CliError::invalid(format!(
                "cannot use `--tls-key` file `{}` with `--tls-cert` file `{}`: {why}",
                key.display(),
                cert.display(),
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The certificates of a `--certificate-authority` file, each checked to be usable as a
/// trust anchor (DER that parses as a certificate), so a bad file is refused naming it
/// rather than surfacing as a connection error.
pub fn roots(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, CliError> {
    let certs = certificates(path, what)?;
    let mut store = rustls::RootCertStore::empty();
    for cert in &certs {
        store.add(cert.clone()).map_err(|e| {
            CliError::invalid(format!(
                "{what} holds a certificate that cannot be used: {}",
                lower_first(&e.to_string())
            ))
        })?;
    }
    Ok(certs)
}

fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_hold_no_pem_are_invalid_input_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = certificates(&junk, "`--tls-cert` file `junk.pem`").unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::InvalidInput);
        assert_eq!(
            e.message,
            "`--tls-cert` file `junk.pem` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)"
        );
        let e = private_key(&junk, "`--tls-key` file `junk.pem`").unwrap_err();
        assert_eq!(
            e.message,
            "`--tls-key` file `junk.pem` holds no PEM private key (`-----BEGIN PRIVATE KEY-----`)"
        );
        let missing = dir.path().join("missing.pem");
        let e = roots(&missing, "certificate authority file `missing.pem`").unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::InvalidInput);
        assert_eq!(
            e.message,
            "cannot read certificate authority file `missing.pem`: no such file or directory"
        );
    }
}
