//! Receipt handles: the opaque tokens a receive hands out.
//!
//! A handle names a message (its sequence number in the queue), one receive
//! of it (the receive's number, 1 for the first), and carries a tag that
//! proves it was issued: a keyed hash of both under the message's receipt
//! key, a random number drawn at its first receive and never shown. So the
//! queue can tell, in O(1) and without remembering every handle, whether a
//! handle is the latest receive's (only that one deletes, so that a consumer
//! whose visibility timeout ran out cannot delete the copy another consumer
//! is working on) or an earlier one of the same message (which, as recorded
//! against AWS, still changes the message's visibility on a standard queue),
//! and a handle nobody was given acts on nothing.

use std::hash::Hasher;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use siphasher::sip::SipHasher24;

use crate::error::{ErrorCode, Result, SqsError};

/// Handles of the first format (sequence number and a nonce, 17 bytes),
/// handed out before receives were numbered: they still decode, as a
/// receive that matches nothing, so that a consumer holding one across an
/// upgrade sees a stale handle, not an invalid one.
const VERSION_UNNUMBERED: u8 = 1;
const UNNUMBERED_LEN: usize = 17;
const VERSION: u8 = 2;
const ENCODED_LEN: usize = 21;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiptHandle {
    pub seq: u64,
    /// Which receive of the message issued it: 1 for the first; 0 matches
    /// no receive.
    pub receive: u32,
    pub tag: u64,
}

/// How a handle relates to the message it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    /// Issued by the message's latest receive.
    Latest,
    /// Issued by an earlier receive of the message.
    Earlier,
}

impl ReceiptHandle {
    /// The handle of receive number `receive` of message `seq`, whose
    /// receipt key is `key`.
    pub fn issue(seq: u64, receive: u32, key: u64) -> ReceiptHandle {
        ReceiptHandle {
            seq,
            receive,
            tag: tag(key, seq, receive),
        }
    }

    /// Whether this handle was issued for the message with this key, whose
    /// latest receive is number `receives`.
    pub fn issued(&self, key: Option<u64>, receives: u32) -> Option<Issued> {
        let key = key?;
        let genuine = (1..=receives).contains(&self.receive) && self.tag == tag(key, self.seq, self.receive);
        match genuine {
            false => None,
            true if self.receive == receives => Some(Issued::Latest),
            true => Some(Issued::Earlier),
        }
    }

    pub fn encode(&self) -> String {
        let mut bytes = [0u8; ENCODED_LEN];
        bytes[0] = VERSION;
        bytes[1..9].copy_from_slice(&self.seq.to_be_bytes());
        bytes[9..13].copy_from_slice(&self.receive.to_be_bytes());
        bytes[13..].copy_from_slice(&self.tag.to_be_bytes());
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
        let word =
            |range: std::ops::Range<usize>| u64::from_be_bytes(bytes[range].try_into().expect("8 bytes"));
        match (bytes.first(), bytes.len()) {
            (Some(&VERSION), ENCODED_LEN) => Ok(ReceiptHandle {
                seq: word(1..9),
                receive: u32::from_be_bytes(bytes[9..13].try_into().expect("4 bytes")),
                tag: word(13..21),
            }),
            (Some(&VERSION_UNNUMBERED), UNNUMBERED_LEN) => Ok(ReceiptHandle {
                seq: word(1..9),
                receive: 0,
                tag: word(9..17),
            }),
            _ => Err(invalid()),
        }
    }
}

/// SipHash-2-4 of the receive number, keyed by the message's receipt key
/// and sequence number: a keyed function made for short inputs (cheap on
/// every receive and delete), from which, without the key, no tag can be
/// derived from the others.
fn tag(key: u64, seq: u64, receive: u32) -> u64 {
    let mut hasher = SipHasher24::new_with_keys(key, seq);
    hasher.write_u32(receive);
    hasher.finish()
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
        let handle = ReceiptHandle::issue(42, 3, u64::MAX - 7);
        assert_eq!(ReceiptHandle::decode(&handle.encode()).unwrap(), handle);
    }

    #[test]
    fn a_handle_tells_the_latest_receive_from_earlier_ones_and_from_forgeries() {
        let key = 0x5eed;
        let first = ReceiptHandle::issue(7, 1, key);
        let second = ReceiptHandle::issue(7, 2, key);
        assert_eq!(second.issued(Some(key), 2), Some(Issued::Latest));
        assert_eq!(first.issued(Some(key), 2), Some(Issued::Earlier));
        assert_eq!(
            ReceiptHandle::issue(7, 3, key).issued(Some(key), 2),
            None,
            "not received yet"
        );
        assert_eq!(second.issued(Some(key + 1), 2), None, "another message's key");
        assert_eq!(second.issued(None, 2), None, "never received");
        let forged = ReceiptHandle {
            tag: second.tag ^ 1,
            ..second
        };
        assert_eq!(forged.issued(Some(key), 2), None);
        let other_message = ReceiptHandle { seq: 8, ..second };
        assert_eq!(other_message.issued(Some(key), 2), None);
    }

    #[test]
    fn handles_of_the_first_format_decode_and_match_no_receive() {
        let mut bytes = [0u8; UNNUMBERED_LEN];
        bytes[0] = VERSION_UNNUMBERED;
        bytes[8] = 9;
        let old = ReceiptHandle::decode(&URL_SAFE_NO_PAD.encode(bytes)).unwrap();
        assert_eq!((old.seq, old.receive), (9, 0));
        assert_eq!(old.issued(Some(0), 5), None);
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
