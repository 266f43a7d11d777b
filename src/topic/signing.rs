//! The key SNS documents are signed with, and its self-signed certificate,
//! served at `SigningCertURL` so that a subscriber can check a message came
//! from this ssq as SDK validators check AWS's.
//!
//! The key (RSA 2048, made on a blocking thread: it takes a moment) is
//! kept with the state, as a [`StoredKey`] record the store holds beside
//! the topics, so that a document signed before a failover or a restart
//! still verifies with the certificate the next leader serves. Its
//! certificate's address names it by a digest of the certificate.

use base64::Engine as _;
use rsa::pkcs1v15::SigningKey as RsaSigner;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::envelope::Sign;

/// Where certificates are served, below the instance's base URL.
pub const CERTIFICATE_PATH: &str = "/_ssq/sns/";

/// The signing key and its certificate.
pub struct SigningKey {
    sha1: RsaSigner<sha1::Sha1>,
    sha256: RsaSigner<rsa::sha2::Sha256>,
    stored: StoredKey,
    /// `SimpleNotificationService-<digest>.pem`.
    file_name: String,
}

/// The key as the state keeps it: PEM text of the private key (PKCS#8) and
/// of its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredKey {
    pub private_key_pem: String,
    pub certificate_pem: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    #[error("could not make the SNS signing key: {0}")]
    Key(#[from] rsa::Error),
    #[error("could not encode the SNS signing key: {0}")]
    Encode(#[from] rsa::pkcs8::Error),
    #[error("could not make the SNS signing certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("the stored SNS signing certificate is not PEM")]
    NotPem,
}

impl SigningKey {
    /// Makes a new key and certificate. Slow (RSA key generation): call on
    /// a blocking thread.
    pub fn generate() -> Result<SigningKey, SigningKeyError> {
        let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048)?;
        let pem = key.to_pkcs8_pem(LineEnding::LF)?;
        let key_pair = rcgen::KeyPair::from_pkcs8_pem_and_sign_algo(&pem, &rcgen::PKCS_RSA_SHA256)?;
        let mut params = rcgen::CertificateParams::new(vec!["ssq.sns.local".to_string()])?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "ssq SNS signing");
        let certificate = params.self_signed(&key_pair)?;
        SigningKey::from_stored(StoredKey {
            private_key_pem: pem.to_string(),
            certificate_pem: certificate.pem(),
        })
    }

    /// The key a state keeps.
    pub fn from_stored(stored: StoredKey) -> Result<SigningKey, SigningKeyError> {
        let key = rsa::RsaPrivateKey::from_pkcs8_pem(&stored.private_key_pem)?;
        let der = pem_body(&stored.certificate_pem).ok_or(SigningKeyError::NotPem)?;
        let digest = sha2::Sha256::digest(&der);
        let file_name = format!("SimpleNotificationService-{}.pem", hex::encode(&digest[..16]));
        Ok(SigningKey {
            sha1: RsaSigner::new(key.clone()),
            sha256: RsaSigner::new(key),
            stored,
            file_name,
        })
    }

    /// What the state keeps of it.
    pub fn stored(&self) -> &StoredKey {
        &self.stored
    }

    /// The certificate, if `file_name` names it.
    pub fn certificate(&self, file_name: &str) -> Option<&str> {
        (file_name == self.file_name).then_some(self.stored.certificate_pem.as_str())
    }
}

impl Sign for SigningKey {
    fn sign(&self, version: u8, text: &[u8]) -> String {
        let signature = match version {
            2 => self.sha256.sign(text).to_vec(),
            _ => self.sha1.sign(text).to_vec(),
        };
        base64::engine::general_purpose::STANDARD.encode(signature)
    }

    fn certificate_url(&self, base_url: &str) -> String {
        format!("{base_url}{CERTIFICATE_PATH}{}", self.file_name)
    }
}

/// The bytes of a one-block PEM text.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

#[cfg(test)]
mod tests {
    use rsa::pkcs1v15::{Signature, VerifyingKey};
    use rsa::signature::Verifier;

    use super::*;

    #[test]
    fn documents_verify_with_the_served_certificate_in_both_versions() {
        let key = SigningKey::generate().unwrap();
        let url = key.certificate_url("http://127.0.0.1:9324");
        let file = url.rsplit('/').next().unwrap();
        assert!(file.starts_with("SimpleNotificationService-") && file.ends_with(".pem"));
        assert!(
            key.certificate(file)
                .unwrap()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(key.certificate("SimpleNotificationService-other.pem").is_none());
        let public = rsa::RsaPublicKey::from(key.sha1.as_ref());
        for version in [1u8, 2] {
            let signature = base64::engine::general_purpose::STANDARD
                .decode(key.sign(version, b"Message\nhi\n"))
                .unwrap();
            let signature = Signature::try_from(signature.as_slice()).unwrap();
            let verified = match version {
                1 => VerifyingKey::<sha1::Sha1>::new(public.clone()).verify(b"Message\nhi\n", &signature),
                _ => VerifyingKey::<rsa::sha2::Sha256>::new(public.clone())
                    .verify(b"Message\nhi\n", &signature),
            };
            assert!(verified.is_ok(), "version {version}");
            let wrong =
                VerifyingKey::<rsa::sha2::Sha256>::new(public.clone()).verify(b"Message\nho\n", &signature);
            assert!(wrong.is_err());
        }
        // The key a state keeps is the same key: same certificate address,
        // same signatures.
        let again = SigningKey::from_stored(key.stored().clone()).unwrap();
        assert_eq!(again.certificate_url("http://h"), key.certificate_url("http://h"));
        assert_eq!(again.sign(2, b"x"), key.sign(2, b"x"));
    }
}
