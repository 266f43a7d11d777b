//! Messages as the core keeps them, and the rules for their contents.
//!
//! What a client may put in a message (body characters, attribute names, data
//! types, number formats) and the MD5 digests that the SDKs check are defined
//! here once, so both wire formats enforce them identically.

use std::collections::BTreeMap;
use std::sync::Arc;

use md5::{Digest, Md5};

use super::receipt::{Issued, ReceiptHandle};
use crate::error::{ErrorCode, Result, SqsError};

/// At most this many message attributes per message.
pub const MAX_MESSAGE_ATTRIBUTES: usize = 10;
const MAX_ATTRIBUTE_NAME_LEN: usize = 256;
const MAX_DATA_TYPE_LEN: usize = 256;

/// The value of one message attribute. Number values are kept as the string
/// the client sent, since SQS preserves their exact text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    String(String),
    Binary(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageAttribute {
    /// `String`, `Number` or `Binary`, optionally with a custom suffix
    /// (`Number.int`, `Binary.gif`).
    pub data_type: String,
    pub value: AttributeValue,
}

/// Ordered by name: the MD5 that AWS defines walks the attributes in that order.
pub type MessageAttributes = BTreeMap<String, MessageAttribute>;

/// One stored message. Body and attributes are shared, so that handing a
/// message to a receiver costs a reference count, not a copy of up to 1 MiB.
#[derive(Debug, Clone)]
pub struct Message {
    /// Position in the queue: increases with every send, never reused.
    pub seq: u64,
    pub id: uuid::Uuid,
    pub body: Arc<str>,
    pub attributes: Arc<MessageAttributes>,
    pub md5_of_body: [u8; 16],
    pub sender_id: Arc<str>,
    /// The AWSTraceHeader system attribute (X-Ray), if the sender set one.
    pub trace_header: Option<Arc<str>>,
    /// MessageGroupId: FIFO ordering group, or a fair-queue group.
    pub group_id: Option<Arc<str>>,
    /// MessageDeduplicationId (FIFO).
    pub dedup_id: Option<Arc<str>>,
    /// The ARN of the queue this message was moved from as a dead letter.
    pub dead_letter_source: Option<Arc<str>>,
    /// Wall-clock milliseconds.
    pub sent_at: u64,
    pub receive_count: u32,
    pub first_received_at: Option<u64>,
    /// The key of its receipt handles, drawn at the first receive (see
    /// `receipt`): with `receive_count` it tells which handle is the latest.
    /// Kept after the visibility timeout runs out, since SQS still honours
    /// the latest handle until the message is received again.
    pub receipt_key: Option<u64>,
    pub state: MessageState,
}

/// Where a message stands. Deadlines are wall-clock milliseconds, so that
/// they mean the same on whichever instance loads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// Waiting for its delay to pass.
    Delayed { until: u64 },
    /// Ready to be received since `since`: when it was sent, its delay
    /// ended, or its visibility timeout ran out or was cut short. FIFO
    /// queues line up their ready groups by it (see `queue::Groups`).
    Visible { since: u64 },
    /// Received at `received_at` and hidden until `until`.
    InFlight { until: u64, received_at: u64 },
}

/// MessageGroupId and MessageDeduplicationId: 1 to 128 letters, digits and
/// ASCII punctuation.
pub fn validate_fifo_id(name: &str, value: &str) -> Result<()> {
    let valid = (1..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation());
    if valid {
        Ok(())
    } else {
        Err(SqsError::invalid_parameter(format!(
            "Value {value} for parameter {name} is invalid. Reason: {name} can only include alphanumeric and punctuation characters. 1 to 128 in length."
        )))
    }
}

/// The deduplication id of content-based deduplication: SHA-256 of the body.
pub fn content_dedup_id(body: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(body.as_bytes()))
}

/// Checks that a body only uses the characters SQS allows:
/// #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
/// (Surrogates cannot occur in a Rust string.)
pub fn validate_body(body: &str) -> Result<()> {
    if body.is_empty() {
        return Err(SqsError::new(
            ErrorCode::MissingParameter,
            "The request must contain the parameter MessageBody.",
        ));
    }
    // Most bodies are ASCII text: one look per byte settles them.
    let ascii_text = body
        .bytes()
        .all(|b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7f));
    if ascii_text {
        return Ok(());
    }
    if let Some(bad) = body.chars().find(|c| !is_xml_char(*c)) {
        return Err(SqsError::new(
            ErrorCode::InvalidMessageContents,
            format!(
                "Invalid characters found. The message body contains U+{:04X}, which SQS does not allow; \
                 allowed are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.",
                bad as u32
            ),
        ));
    }
    Ok(())
}

/// The characters SQS takes in a body, an attribute or any other text it
/// stores: XML 1.0's, since every stored text may be written into a Query
/// answer, and a character XML cannot carry would make the whole answer
/// unreadable (even as a character reference).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Whether every character of `text` is one XML can carry.
pub fn is_xml_text(text: &str) -> bool {
    text.chars().all(is_xml_char)
}

/// The bytes attributes count towards the message size: name, data type
/// and value of each.
pub fn attributes_size(attributes: &MessageAttributes) -> usize {
    attributes
        .iter()
        .map(|(name, a)| name.len() + a.data_type.len() + a.value_len())
        .sum()
}

/// Validates a message's attributes.
pub fn validate_attributes(attributes: &MessageAttributes) -> Result<()> {
    if attributes.len() > MAX_MESSAGE_ATTRIBUTES {
        return Err(SqsError::invalid_parameter(format!(
            "Number of message attributes [{}] exceeds the allowed maximum [{MAX_MESSAGE_ATTRIBUTES}].",
            attributes.len()
        )));
    }
    for (name, attribute) in attributes {
        validate_attribute_name(name)?;
        validate_attribute(name, attribute)?;
    }
    Ok(())
}

fn validate_attribute_name(name: &str) -> Result<()> {
    let invalid = |why: &str| {
        Err(SqsError::invalid_parameter(format!(
            "Message attribute name '{name}' is invalid: {why}"
        )))
    };
    if name.is_empty() || name.len() > MAX_ATTRIBUTE_NAME_LEN {
        return invalid("it must be 1 to 256 characters long.");
    }
    // Letters and digits of any script: AWS accepts `attr.1øßä`.
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return invalid("it may only contain letters, digits, '_', '-' and '.'.");
    }
    if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return invalid("it must not start or end with a period or contain two periods in a row.");
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("aws.") || lower.starts_with("amazon.") {
        return invalid("the prefixes 'AWS.' and 'Amazon.' are reserved.");
    }
    Ok(())
}

fn validate_attribute(name: &str, attribute: &MessageAttribute) -> Result<()> {
    let data_type = &attribute.data_type;
    if data_type.is_empty() {
        return Err(SqsError::invalid_parameter(format!(
            "The message attribute '{name}' must contain a non-empty attribute type."
        )));
    }
    if data_type.len() > MAX_DATA_TYPE_LEN {
        return Err(SqsError::invalid_parameter(format!(
            "The message attribute '{name}' has a data type longer than {MAX_DATA_TYPE_LEN} characters."
        )));
    }
    if !is_xml_text(data_type) {
        return Err(SqsError::invalid_parameter(format!(
            "The message attribute '{name}' has a data type with characters SQS does not allow."
        )));
    }
    let base = data_type.split('.').next().unwrap_or_default();
    match (base, &attribute.value) {
        ("String", AttributeValue::String(value)) => {
            if value.is_empty() {
                return Err(SqsError::invalid_parameter(format!(
                    "Message (user) attribute '{name}' must contain a non-empty value of type 'String'."
                )));
            }
            // Unlike a body's (InvalidMessageContents), an attribute's bad
            // characters are an invalid parameter, as AWS answers.
            if !is_xml_text(value) {
                return Err(SqsError::invalid_parameter(format!(
                    "The message attribute '{name}' contains characters SQS does not allow."
                )));
            }
            Ok(())
        }
        ("Number", AttributeValue::String(value)) => validate_number(name, value),
        ("Binary", AttributeValue::Binary(value)) => {
            if value.is_empty() {
                return Err(SqsError::invalid_parameter(format!(
                    "Message (user) attribute '{name}' must contain a non-empty value of type 'Binary'."
                )));
            }
            Ok(())
        }
        ("String" | "Number", AttributeValue::Binary(_)) => Err(SqsError::invalid_parameter(format!(
            "The message attribute '{name}' with type '{base}' must use field 'String'."
        ))),
        ("Binary", AttributeValue::String(_)) => Err(SqsError::invalid_parameter(format!(
            "The message attribute '{name}' with type 'Binary' must use field 'Binary'."
        ))),
        _ => Err(SqsError::invalid_parameter(format!(
            "The type of message attribute '{name}' is invalid. You must use only the following supported type prefixes: Binary, Number, String."
        ))),
    }
}

/// SQS numbers: up to 38 significant digits, from -10^128 to +10^126.
fn validate_number(name: &str, value: &str) -> Result<()> {
    let invalid = || {
        Err(SqsError::invalid_parameter(format!(
            "Can't cast the value of message (user) attribute '{name}' to a number."
        )))
    };
    let unsigned = value.strip_prefix(['-', '+']).unwrap_or(value);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty()) || !digits_ok(int_part) || !digits_ok(frac_part) {
        return invalid();
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => match e.parse::<i32>() {
            Ok(e) => e.into(),
            Err(_) => return invalid(),
        },
    };
    let digits: String = format!("{int_part}{frac_part}");
    let significant = digits.trim_start_matches('0');
    if significant.is_empty() {
        return Ok(()); // zero
    }
    if significant.trim_end_matches('0').len() > 38 {
        return Err(SqsError::invalid_parameter(format!(
            "The value of message attribute '{name}' has more than 38 significant digits."
        )));
    }
    // Decimal magnitude: the power of ten of the leading significant digit.
    let leading_zeros_in_frac = if int_part.trim_start_matches('0').is_empty() {
        frac_part.len() - frac_part.trim_start_matches('0').len()
    } else {
        0
    };
    let int_digits = int_part.trim_start_matches('0').len() as i64;
    let magnitude = if int_digits > 0 {
        int_digits - 1 + exponent
    } else {
        -(leading_zeros_in_frac as i64) - 1 + exponent
    };
    let max_magnitude = if value.starts_with('-') { 128 } else { 126 };
    if magnitude > max_magnitude || magnitude < -130 {
        return Err(SqsError::invalid_parameter(format!(
            "The value of message attribute '{name}' is outside the range SQS numbers allow (-10^128 to 10^126)."
        )));
    }
    Ok(())
}

impl Message {
    /// The bytes this message counts against the server's --max-bytes: body
    /// and attributes, as SQS counts a message's size.
    pub fn payload_size(&self) -> u64 {
        (self.body.len() + attributes_size(&self.attributes)) as u64
    }

    /// Whether `handle` was issued for this message, and by its latest
    /// receive.
    pub(super) fn issued(&self, handle: &ReceiptHandle) -> Option<Issued> {
        handle.issued(self.receipt_key, self.receive_count)
    }
}

impl MessageAttribute {
    fn value_len(&self) -> usize {
        match &self.value {
            AttributeValue::String(s) => s.len(),
            AttributeValue::Binary(b) => b.len(),
        }
    }
}

pub fn md5_of_body(body: &str) -> [u8; 16] {
    Md5::digest(body.as_bytes()).into()
}

/// MD5OfMessageAttributes exactly as AWS computes it: for each attribute in
/// name order, the length-prefixed name, the length-prefixed data type, one
/// transport byte (1 for String and Number, 2 for Binary) and the
/// length-prefixed value; lengths are 4-byte big-endian.
pub fn md5_of_attributes<'a>(
    attributes: impl IntoIterator<Item = (&'a String, &'a MessageAttribute)>,
) -> [u8; 16] {
    fn put(hasher: &mut Md5, bytes: &[u8]) {
        hasher.update((bytes.len() as u32).to_be_bytes());
        hasher.update(bytes);
    }
    let mut hasher = Md5::new();
    for (name, attribute) in attributes {
        put(&mut hasher, name.as_bytes());
        put(&mut hasher, attribute.data_type.as_bytes());
        let (transport, value) = match &attribute.value {
            AttributeValue::String(s) => (1u8, s.as_bytes()),
            AttributeValue::Binary(b) => (2u8, b.as_slice()),
        };
        hasher.update([transport]);
        put(&mut hasher, value);
    }
    hasher.finalize().into()
}

/// MD5OfMessageSystemAttributes: the same encoding, over AWSTraceHeader.
pub fn md5_of_trace_header(trace_header: &str) -> [u8; 16] {
    let attribute = MessageAttribute {
        data_type: "String".into(),
        value: AttributeValue::String(trace_header.into()),
    };
    md5_of_attributes([(&"AWSTraceHeader".to_string(), &attribute)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_attr(data_type: &str, value: &str) -> MessageAttribute {
        MessageAttribute {
            data_type: data_type.into(),
            value: AttributeValue::String(value.into()),
        }
    }

    #[test]
    fn body_md5_matches_the_well_known_digest() {
        assert_eq!(
            hex::encode(md5_of_body("hello")),
            "5d41402abc4b2a76b9719d911017c592"
        );
    }

    /// Reference value computed with the algorithm the AWS Java SDK uses
    /// (MessageMD5ChecksumHandler) for {"a": String "b"}.
    #[test]
    fn attribute_md5_follows_the_aws_encoding() {
        let mut attrs = MessageAttributes::new();
        attrs.insert("a".into(), string_attr("String", "b"));
        let mut expected = Vec::new();
        for part in [&b"a"[..], b"String"] {
            expected.extend((part.len() as u32).to_be_bytes());
            expected.extend(part);
        }
        expected.push(1);
        expected.extend(1u32.to_be_bytes());
        expected.extend(b"b");
        assert_eq!(
            md5_of_attributes(&attrs),
            <[u8; 16]>::from(Md5::digest(&expected))
        );
    }

    #[test]
    fn bodies_with_forbidden_characters_are_rejected() {
        assert!(validate_body("tab\tnewline\ncr\r ok ✓ 𝄞").is_ok());
        assert_eq!(
            validate_body("nul\0").unwrap_err().code,
            ErrorCode::InvalidMessageContents
        );
        assert_eq!(
            validate_body("\u{FFFF}").unwrap_err().code,
            ErrorCode::InvalidMessageContents
        );
        assert_eq!(validate_body("").unwrap_err().code, ErrorCode::MissingParameter);
    }

    #[test]
    fn attribute_names_follow_the_sqs_rules() {
        for bad in [
            "",
            ".a",
            "a.",
            "a..b",
            "AWS.x",
            "amazon.y",
            "sp ace",
            &"n".repeat(257),
        ] {
            let mut attrs = MessageAttributes::new();
            attrs.insert(bad.to_string(), string_attr("String", "v"));
            assert!(validate_attributes(&attrs).is_err(), "{bad:?} should be rejected");
        }
        let mut attrs = MessageAttributes::new();
        attrs.insert("my.attr-1_x".into(), string_attr("String.custom", "v"));
        validate_attributes(&attrs).unwrap();
        assert_eq!(attributes_size(&attrs), "my.attr-1_x".len() + 13 + 1);
    }

    #[test]
    fn numbers_are_checked_for_format_precision_and_range() {
        for good in [
            "0",
            "-1",
            "+3.25",
            "1e10",
            "1.5E-3",
            ".5",
            "5.",
            &"9".repeat(38),
            "1e126",
            "-1e128",
        ] {
            assert!(validate_number("n", good).is_ok(), "{good} should be accepted");
        }
        for bad in [
            "",
            "abc",
            "1..2",
            "--1",
            "1e",
            "0x10",
            &"9".repeat(39),
            "1e127",
            "NaN",
        ] {
            assert!(validate_number("n", bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn data_types_must_match_their_values() {
        let binary_as_string = MessageAttribute {
            data_type: "Binary".into(),
            value: AttributeValue::String("x".into()),
        };
        let unknown = string_attr("Date", "x");
        for attr in [binary_as_string, unknown, string_attr("String", "")] {
            let mut attrs = MessageAttributes::new();
            attrs.insert("a".into(), attr);
            assert!(validate_attributes(&attrs).is_err());
        }
    }

    #[test]
    fn too_many_attributes_are_rejected() {
        let attrs: MessageAttributes = (0..11)
            .map(|i| (format!("a{i}"), string_attr("String", "v")))
            .collect();
        assert!(validate_attributes(&attrs).is_err());
    }
}
