//! Receipt handles: the opaque tokens a receive hands out.
//!
//! A handle names a message (its sequence number in the queue) and one
//! particular receive of it (a random nonce drawn at that receive). Only the
//! latest receive's handle acts on a message, so a consumer whose visibility
//! timeout ran out cannot delete the copy another consumer is working on.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::{ErrorCode, Result, SqsError};

const VERSION: u8 = 1;
const ENCODED_LEN: usize = 17;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiptHandle {
    pub seq: u64,
    pub nonce: u64,
}

impl ReceiptHandle {
    pub fn encode(&self) -> String {
        let mut bytes = [0u8; ENCODED_LEN];
        bytes[0] = VERSION;
        bytes[1..9].copy_from_slice(&self.seq.to_be_bytes());
        bytes[9..].copy_from_slice(&self.nonce.to_be_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<ReceiptHandle> {
        let invalid = || {
            SqsError::new(
                ErrorCode::ReceiptHandleIsInvalid,
                format!(
                    "The input receipt handle \"{}\" is not a valid receipt handle.",
                    truncate(text)
                ),
            )
        };
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
        if bytes.len() != ENCODED_LEN || bytes[0] != VERSION {
            return Err(invalid());
        }
        let word =
            |range: std::ops::Range<usize>| u64::from_be_bytes(bytes[range].try_into().expect("8 bytes"));
        Ok(ReceiptHandle {
            seq: word(1..9),
            nonce: word(9..17),
        })
    }
}

/// Error messages quote client input; keep a hostile handle from bloating them.
fn truncate(text: &str) -> &str {
    match text.char_indices().nth(100) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let handle = ReceiptHandle {
            seq: 42,
            nonce: u64::MAX - 7,
        };
        assert_eq!(ReceiptHandle::decode(&handle.encode()).unwrap(), handle);
    }

    #[test]
    fn garbage_is_reported_as_an_invalid_handle() {
        for text in ["", "not base64!", "AAAA", &"A".repeat(10_000)] {
            let err = ReceiptHandle::decode(text).unwrap_err();
            assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
            assert!(err.message.len() < 300);
        }
    }
}
