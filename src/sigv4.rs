//! Optional AWS Signature Version 4 verification.
//!
//! With credentials configured (`--credentials`), every SQS request must be
//! signed for the service `sqs` with one of them, in the Authorization header
//! or in the query string (presigned), dated within 15 minutes of this
//! server's clock. The signature is recomputed from the request exactly as
//! the SDKs compute it, and compared in constant time.

use std::collections::HashMap;

use axum::http::{HeaderMap, Method, Uri};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, SqsError};

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// How far a request's date may be from this server's clock.
const MAX_SKEW_SECONDS: i64 = 15 * 60;

/// Access key id → secret access key.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    secrets: HashMap<String, String>,
}

impl Credentials {
    /// Reads `access-key-id:secret` lines; `#` starts a comment.
    pub fn parse(text: &str) -> Result<Credentials, String> {
        let mut secrets = HashMap::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, secret) = line
                .split_once(':')
                .filter(|(id, secret)| !id.trim().is_empty() && !secret.trim().is_empty())
                .ok_or_else(|| format!("line {}: expected access-key-id:secret", number + 1))?;
            secrets.insert(id.trim().to_string(), secret.trim().to_string());
        }
        if secrets.is_empty() {
            return Err("no credentials in the file".into());
        }
        Ok(Credentials { secrets })
    }

    /// Checks the signature of a request; `now` is Unix seconds.
    pub fn verify(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<(), SqsError> {
        let signed = Signed::from_request(uri, headers)?;
        let secret = self.secrets.get(&signed.access_key_id).ok_or_else(|| {
            SqsError::new(
                ErrorCode::InvalidClientTokenId,
                "The security token included in the request is invalid.",
            )
        })?;
        let date = parse_amz_date(&signed.amz_date).ok_or_else(|| {
            SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                "X-Amz-Date is not of the form YYYYMMDDTHHMMSSZ.",
            )
        })?;
        if (date - now).abs() > MAX_SKEW_SECONDS {
            return Err(SqsError::new(
                ErrorCode::RequestExpired,
                format!(
                    "Request has expired: X-Amz-Date {} is more than 15 minutes from the server's time.",
                    signed.amz_date
                ),
            ));
        }
        let scope_ok = signed.scope_date == signed.amz_date[..8]
            && signed.service == "sqs"
            && signed.terminator == "aws4_request";
        if !scope_ok {
            return Err(SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                "The credential scope must be <date>/<region>/sqs/aws4_request, dated as X-Amz-Date.",
            ));
        }
        let canonical = canonical_request(method, uri, headers, body, &signed);
        let string_to_sign = format!(
            "{ALGORITHM}\n{}\n{}/{}/{}/{}\n{}",
            signed.amz_date,
            signed.scope_date,
            signed.region,
            signed.service,
            signed.terminator,
            hex(&Sha256::digest(canonical.as_bytes()))
        );
        let mut key = hmac(format!("AWS4{secret}").as_bytes(), signed.scope_date.as_bytes());
        for part in [signed.region.as_str(), "sqs", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        let expected = hex(&hmac(&key, string_to_sign.as_bytes()));
        if constant_time_eq(expected.as_bytes(), signed.signature.as_bytes()) {
            Ok(())
        } else {
            Err(SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
            ))
        }
    }
}

/// What a request says about its own signature.
struct Signed {
    access_key_id: String,
    scope_date: String,
    region: String,
    service: String,
    terminator: String,
    signed_headers: Vec<String>,
    signature: String,
    amz_date: String,
    /// Presigned in the query string rather than in the header.
    presigned: bool,
}

impl Signed {
    fn from_request(uri: &Uri, headers: &HeaderMap) -> Result<Signed, SqsError> {
        let missing = || {
            SqsError::new(
                ErrorCode::MissingAuthenticationToken,
                "Request is missing Authentication Token",
            )
        };
        let malformed = |why: &str| {
            SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                format!("The signature is malformed: {why}."),
            )
        };
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (credential, signed_headers, signature, amz_date, presigned) =
            if let Some(authorization) = header("authorization") {
                let rest = authorization
                    .strip_prefix(ALGORITHM)
                    .ok_or_else(|| malformed("only AWS4-HMAC-SHA256 is accepted"))?;
                let mut fields = HashMap::new();
                for part in rest.split(',') {
                    if let Some((key, value)) = part.trim().split_once('=') {
                        fields.insert(key.trim().to_string(), value.trim().to_string());
                    }
                }
                let field = |name: &str| {
                    fields
                        .get(name)
                        .cloned()
                        .ok_or_else(|| malformed(&format!("{name} is missing")))
                };
                let date = header("x-amz-date").ok_or_else(|| malformed("X-Amz-Date is missing"))?;
                (
                    field("Credential")?,
                    field("SignedHeaders")?,
                    field("Signature")?,
                    date,
                    false,
                )
            } else {
                let query: HashMap<String, String> =
                    serde_urlencoded::from_str(uri.query().unwrap_or_default()).unwrap_or_default();
                if query.get("X-Amz-Algorithm").map(String::as_str) != Some(ALGORITHM) {
                    return Err(missing());
                }
                let field = |name: &str| {
                    query
                        .get(name)
                        .cloned()
                        .ok_or_else(|| malformed(&format!("{name} is missing")))
                };
                (
                    field("X-Amz-Credential")?,
                    field("X-Amz-SignedHeaders")?,
                    field("X-Amz-Signature")?,
                    field("X-Amz-Date")?,
                    true,
                )
            };
        let parts: Vec<&str> = credential.split('/').collect();
        let [access_key_id, scope_date, region, service, terminator] = parts[..] else {
            return Err(malformed(
                "Credential must be <key id>/<date>/<region>/<service>/aws4_request",
            ));
        };
        if amz_date.len() != 16 {
            return Err(malformed("X-Amz-Date must be YYYYMMDDTHHMMSSZ"));
        }
        Ok(Signed {
            access_key_id: access_key_id.to_string(),
            scope_date: scope_date.to_string(),
            region: region.to_string(),
            service: service.to_string(),
            terminator: terminator.to_string(),
            signed_headers: signed_headers.split(';').map(str::to_ascii_lowercase).collect(),
            signature: signature.to_ascii_lowercase(),
            amz_date,
            presigned,
        })
    }
}

fn canonical_request(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    signed: &Signed,
) -> String {
    let path = if uri.path().is_empty() { "/" } else { uri.path() };
    let canonical_path: Vec<String> = path.split('/').map(|segment| encode(&decode(segment))).collect();
    let mut query: Vec<(String, String)> =
        serde_urlencoded::from_str::<Vec<(String, String)>>(uri.query().unwrap_or_default())
            .unwrap_or_default()
            .into_iter()
            .filter(|(key, _)| !(signed.presigned && key == "X-Amz-Signature"))
            .map(|(key, value)| (encode(&key), encode(&value)))
            .collect();
    query.sort();
    let query: Vec<String> = query
        .into_iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let mut canonical_headers = String::new();
    for name in &signed.signed_headers {
        let values: Vec<String> = headers
            .get_all(name.as_str())
            .iter()
            .map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let payload_hash = match headers.get("x-amz-content-sha256").and_then(|v| v.to_str().ok()) {
        Some(hash) => hash.to_string(),
        None if signed.presigned => "UNSIGNED-PAYLOAD".to_string(),
        None => hex(&Sha256::digest(body)),
    };
    format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{}\n{payload_hash}",
        canonical_path.join("/"),
        query.join("&"),
        signed.signed_headers.join(";")
    )
}

/// RFC 3986 encoding as SigV4 wants it: everything but unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Undoes percent-encoding of a path segment (so that it is encoded once).
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(byte) = segment
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `YYYYMMDDTHHMMSSZ` → Unix seconds.
fn parse_amz_date(text: &str) -> Option<i64> {
    let digits = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    if text.len() != 16 || &text[8..9] != "T" || &text[15..] != "Z" {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (hour, minute, second) = (digits(9..11)?, digits(11..13)?, digits(13..15)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert_to_unix_seconds() {
        assert_eq!(parse_amz_date("19700101T000000Z"), Some(0));
        assert_eq!(parse_amz_date("20150830T123600Z"), Some(1_440_938_160));
        assert_eq!(parse_amz_date("2015-08-30T12:36Z"), None);
        assert_eq!(parse_amz_date("20151330T123600Z"), None);
    }

    /// The worked example of AWS's SigV4 documentation (the IAM
    /// ListUsers GET), adapted to the service `sqs` only in its scope: the
    /// derived key and the encoding rules are what it checks.
    #[test]
    fn signing_key_matches_the_aws_documentation() {
        let mut key = hmac(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", b"20150830");
        for part in ["us-east-1", "iam", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        assert_eq!(
            hex(&key),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        assert_eq!(encode("a b/c~"), "a%20b%2Fc~");
    }

    #[test]
    fn credential_files_are_read_line_by_line() {
        let credentials = Credentials::parse("# comment\nAKID1:secret1\n\n AKID2 : secret2 \n").unwrap();
        assert_eq!(credentials.secrets["AKID2"], "secret2");
        assert!(Credentials::parse("no colon\n").is_err());
        assert!(Credentials::parse("# nothing\n").is_err());
    }
}
