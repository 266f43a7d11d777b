//! The SNS signing key as calls and the certificate route get it: the key
//! the state keeps (`topic/signing.rs`), read once per key and shared; a
//! state without one (new, or reset) gets one made on a blocking thread
//! (RSA key generation takes a moment) and kept with it in a commit, so
//! that whichever instance leads next signs with the same key.

use std::sync::{Arc, Mutex};

use crate::service::Service;
use crate::topic::SnsError;
use crate::topic::signing::{SigningKey, SigningKeyError};

#[derive(Default)]
pub struct SigningKeyCell {
    /// The key last read from the state.
    current: Mutex<Option<Arc<SigningKey>>>,
    /// A key made ahead, for a state that has none yet.
    spare: tokio::sync::Mutex<Option<SigningKey>>,
}

impl SigningKeyCell {
    /// The key of `service`'s state; made and kept there if it has none.
    pub async fn get(&self, service: &Service) -> Result<Arc<SigningKey>, SnsError> {
        if let Some(key) = self.kept(service)? {
            return Ok(key);
        }
        // One caller makes and keeps a key; the others wait and read it.
        let mut spare = self.spare.lock().await;
        if let Some(key) = self.kept(service)? {
            return Ok(key);
        }
        let made = match spare.take() {
            Some(made) => made,
            None => make().await?,
        };
        let stored = made.stored().clone();
        let kept = service
            .change_topics(|topics| Ok(topics.keep_signing_key(stored)))
            .await;
        if let Err(error) = kept {
            // Not kept (this instance does not lead): kept for next time.
            *spare = Some(made);
            return Err(error);
        }
        self.kept(service)?
            .ok_or_else(|| internal("the SNS signing key was not kept"))
    }

    /// Makes a key ahead (at start), so that the first Publish of a new
    /// state seldom waits for one.
    pub async fn prepare(&self) -> Result<(), SnsError> {
        let mut spare = self.spare.lock().await;
        if spare.is_none() {
            *spare = Some(make().await?);
        }
        Ok(())
    }

    /// The state's key, read once per key.
    fn kept(&self, service: &Service) -> Result<Option<Arc<SigningKey>>, SnsError> {
        let Some(stored) = service.topics().signing_key().cloned() else {
            return Ok(None);
        };
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(key) = current.as_ref().filter(|key| *key.stored() == stored) {
            return Ok(Some(key.clone()));
        }
        let key = Arc::new(SigningKey::from_stored(stored).map_err(|error| internal(&error.to_string()))?);
        *current = Some(key.clone());
        Ok(Some(key))
    }
}

async fn make() -> Result<SigningKey, SnsError> {
    match tokio::task::spawn_blocking(SigningKey::generate).await {
        Ok(made) => made.map_err(|error: SigningKeyError| internal(&error.to_string())),
        Err(error) => Err(internal(&error.to_string())),
    }
}

fn internal(message: &str) -> SnsError {
    SnsError::new("InternalError", 500, message)
}

/// What the SNS surface keeps of its own.
pub struct SnsApiState {
    pub signing_key: SigningKeyCell,
}
