//! TLS through rustls: a certificate chain and its private key, from PEM files.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The PEM files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Why the TLS files do not make a server configuration; each names the file at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("cannot read certificates from {}: {source}", path.display())]
    UnreadableCertificates {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("bad certificate in {}: {source}", path.display())]
    BadCertificate {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("no certificate in {}", path.display())]
    NoCertificate { path: PathBuf },
    #[error("cannot read a private key from {}: {source}", path.display())]
    UnreadableKey {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    /// The crypto provider offers none of the safe protocol versions.
    #[error(transparent)]
    Protocols(rustls::Error),
    #[error("the certificate and key do not make a TLS identity: {0}")]
    NotAnIdentity(rustls::Error),
}

/// The server's TLS configuration; an error names the file and what was wrong with it.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let cert = || files.cert.clone();
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|source| TlsError::UnreadableCertificates {
            path: cert(),
            source,
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::BadCertificate {
            path: cert(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { path: cert() });
    }
    let key =
        PrivateKeyDer::from_pem_file(&files.key).map_err(|source| TlsError::UnreadableKey {
            path: files.key.clone(),
            source,
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Protocols)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::NotAnIdentity)?;
    Ok(Arc::new(config))
}
