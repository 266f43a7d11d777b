//! TLS to a store (Redis, Postgres, MySQL): a rustls client that trusts
//! the certificates of a CA file the operator names, or the system's roots.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why TLS to a store cannot be set up; each names the file to fix.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the TLS file {}: {source}", path.display())]
    CaFileUnreadable {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("the CA file {} holds a bad certificate: {source}", path.display())]
    BadCertificate { path: PathBuf, source: rustls::Error },
    #[error("TLS cannot be set up: {0}")]
    Setup(rustls::Error),
}

/// Installs ring as rustls's process-wide crypto provider, which a client
/// that builds its own TLS configuration needs (fred for `rediss://` with
/// the system's roots, mysql_async); installing it twice is harmless.
pub fn use_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client configuration trusting the CA in `ca_file`, or the system's
/// roots without one; certificates and host names are checked.
pub fn client_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    client_config_with_identity(ca_file, None)
}

/// [`client_config`], presenting the client certificate of `identity`
/// (its certificate chain's PEM file and its private key's) if given.
pub fn client_config_with_identity(
    ca_file: Option<&Path>,
    identity: Option<(&Path, &Path)>,
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let unreadable = |source| TlsError::CaFileUnreadable {
                path: path.to_path_buf(),
                source,
            };
            for certificate in CertificateDer::pem_file_iter(path).map_err(unreadable)? {
                roots
                    .add(certificate.map_err(unreadable)?)
                    .map_err(|source| TlsError::BadCertificate {
                        path: path.to_path_buf(),
                        source,
                    })?;
            }
        }
        None => {
            // Certificates the system holds that rustls cannot read are
            // left out, as every other client does.
            let _ = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?
        .with_root_certificates(roots);
    let Some((cert_file, key_file)) = identity else {
        return Ok(builder.with_no_client_auth());
    };
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::CaFileUnreadable { path, source }
    };
    let chain = CertificateDer::pem_file_iter(cert_file)
        .map_err(unreadable(cert_file))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(unreadable(cert_file))?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(unreadable(key_file))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|source| TlsError::BadCertificate {
            path: cert_file.to_path_buf(),
            source,
        })
}
