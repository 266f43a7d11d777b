//! The process's SNS signing key, made once on a blocking thread (RSA key
//! generation takes a moment) and shared by every call that signs and by
//! the certificate route.

use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::topic::SnsError;
use crate::topic::signing::SigningKey;

#[derive(Default)]
pub struct SigningKeyCell {
    key: OnceCell<Arc<SigningKey>>,
}

impl SigningKeyCell {
    /// The key, made on first use (the node asks at start, so that calls
    /// rarely wait).
    pub async fn get(&self) -> Result<Arc<SigningKey>, SnsError> {
        self.key
            .get_or_try_init(|| async {
                let made = tokio::task::spawn_blocking(SigningKey::generate).await;
                match made {
                    Ok(Ok(key)) => Ok(Arc::new(key)),
                    Ok(Err(error)) => Err(SnsError::new("InternalError", 500, error.to_string())),
                    Err(error) => Err(SnsError::new("InternalError", 500, error.to_string())),
                }
            })
            .await
            .cloned()
    }
}
