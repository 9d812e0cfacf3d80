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

/// The server's TLS configuration; an error names the file and what was wrong with it.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| {
            format!(
                "cannot read certificates from {}: {e}",
                files.cert.display()
            )
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad certificate in {}: {e}", files.cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", files.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "cannot read a private key from {}: {e}",
            files.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("the certificate and key do not make a TLS identity: {e}"))?;
    Ok(Arc::new(config))
}
