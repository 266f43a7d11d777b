//! Optional AWS Signature Version 4 verification.
//!
//! With credentials configured (`--credentials`), every SQS request must be
//! signed for the service `sqs` with one of them, in the Authorization header
//! or in the query string (presigned), dated within 15 minutes of this
//! server's clock. The signature is recomputed from the request exactly as
//! the SDKs compute it, and compared in constant time.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::{ErrorCode, SqsError};
use crate::http::intake::throttle::RateLimit;
use crate::policy::Policy;

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// How far a request's date may be from this server's clock.
const MAX_SKEW_SECONDS: i64 = 15 * 60;

/// One access key of the credentials file: its secret and, when the file
/// gives one, its request rate.
#[derive(Debug, Clone)]
pub struct AccessKey {
    pub secret: String,
    /// The account the key acts in; the instance's own when `None`.
    pub account: Option<String>,
    /// What the key may see and do on the admin page, if it may sign in.
    pub admin: Option<AdminGrant>,
    pub rate: Option<RateLimit>,
    /// The key's identity policy: without one, a key may do anything.
    pub policy: Option<Arc<Policy>>,
}

/// What an account may do over all its keys.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AccountLimits {
    pub rate: Option<RateLimit>,
    /// The most queues it may hold.
    pub max_queues: Option<usize>,
    /// The most message payload its queues may hold, in bytes (the
    /// service keeps it: `service/accounts.rs`).
    pub max_bytes: Option<u64>,
}

/// The access keys requests may be signed with, by id, and the limits of
/// accounts (the file's format: `http/credentials_file.rs`).
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    keys: HashMap<String, AccessKey>,
    accounts: HashMap<String, AccountLimits>,
}

impl Credentials {
    pub fn new(keys: HashMap<String, AccessKey>, accounts: HashMap<String, AccountLimits>) -> Credentials {
        Credentials { keys, accounts }
    }

    /// The byte limits of the accounts that have one.
    pub fn max_bytes_by_account(&self) -> HashMap<String, u64> {
        self.accounts
            .iter()
            .filter_map(|(account, limits)| Some((account.clone(), limits.max_bytes?)))
            .collect()
    }

    /// The limits of `account`, if the file gives it any.
    pub fn account(&self, account: &str) -> Option<&AccountLimits> {
        self.accounts.get(account)
    }

    /// The key `access_key_id`, if `secret` is its secret: how the admin
    /// page signs people in (HTTP Basic), compared in constant time.
    pub fn signing_in(&self, access_key_id: &str, secret: &str) -> Option<&AccessKey> {
        self.keys
            .get(access_key_id)
            .filter(|known| constant_time_eq(known.secret.as_bytes(), secret.as_bytes()))
    }

    /// How many keys there are.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// What the file says of `access_key_id`.
    pub fn key(&self, access_key_id: &str) -> Option<&AccessKey> {
        self.keys.get(access_key_id)
    }

    /// Checks what can be checked before the body is read: that the request
    /// is signed at all, with a known key, for `region` (when one is
    /// required) and the service `sqs`,
    /// with `host` among the signed headers, dated within the skew (or, when
    /// presigned, not yet expired). When the request declares its payload's
    /// hash (`x-amz-content-sha256`), the signature itself is checked here
    /// too, so that an unsigned client never gets as far as having its body
    /// buffered.
    /// `now` is Unix seconds.
    pub fn check_head(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        region: Option<&str>,
        now: i64,
    ) -> Result<HeadChecked, SqsError> {
        let signed = Signed::from_request(uri, headers)?;
        let secret = self
            .keys
            .get(&signed.access_key_id)
            .map(|key| &key.secret)
            .ok_or_else(SqsError::unknown_key)?;
        let date = parse_amz_date(&signed.amz_date).ok_or_else(|| {
            SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                "X-Amz-Date is not of the form YYYYMMDDTHHMMSSZ.",
            )
        })?;
        check_date(&signed, date, now)?;
        if signed.scope_date != signed.amz_date[..8] || signed.terminator != "aws4_request" {
            return Err(SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                "The credential scope must be <date>/<region>/<sqs or sns>/aws4_request, dated as X-Amz-Date.",
            ));
        }
        if signed.service != "sqs" && signed.service != "sns" {
            return Err(SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                format!(
                    "Credential should be scoped to correct service: 'sqs' or 'sns', not '{}'.",
                    signed.service
                ),
            ));
        }
        if let Some(region) = region
            && signed.region != region
        {
            return Err(SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                format!(
                    "Credential should be scoped to a valid region, not '{}'. This server takes only its own region, '{region}' (--regions one).",
                    signed.region
                ),
            ));
        }
        if !signed.signed_headers.iter().any(|name| name == "host") {
            return Err(SqsError::new(
                ErrorCode::SignatureDoesNotMatch,
                "The host header must be signed (SignedHeaders must include host).",
            ));
        }
        let mut key = hmac(format!("AWS4{secret}").as_bytes(), signed.scope_date.as_bytes());
        for part in [signed.region.as_str(), signed.service.as_str(), "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        let head = HeadChecked {
            payload: declared_payload(&signed)?,
            canonical_head: canonical_head(method, uri, headers, &signed),
            signed,
            key,
        };
        if let Some(hash) = head.payload.signed_hash() {
            head.check_signature(&hash)?;
        }
        Ok(head)
    }

    /// Checks the whole signature of a request, body included; `now` is
    /// Unix seconds.
    pub fn verify(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        region: Option<&str>,
        now: i64,
    ) -> Result<(), SqsError> {
        self.check_head(method, uri, headers, region, now)?
            .check_body(body)
    }
}

/// The longest lifetime a presigned URL may ask for: seven days, as in AWS.
const MAX_PRESIGNED_EXPIRY_SECONDS: i64 = 7 * 24 * 3_600;

/// A header-signed request must be dated within the skew; a presigned one
/// is valid from its date (less the skew) until its `X-Amz-Expires` runs out.
fn check_date(signed: &Signed, date: i64, now: i64) -> Result<(), SqsError> {
    let expired =
        |why: String| SqsError::new(ErrorCode::RequestExpired, format!("Request has expired: {why}."));
    if date - now > MAX_SKEW_SECONDS {
        return Err(expired(format!(
            "X-Amz-Date {} is more than 15 minutes ahead of the server's time",
            signed.amz_date
        )));
    }
    match signed.expires {
        None if now - date > MAX_SKEW_SECONDS => Err(expired(format!(
            "X-Amz-Date {} is more than 15 minutes behind the server's time",
            signed.amz_date
        ))),
        Some(expires) if now > date + expires => Err(expired(format!(
            "the presigned URL was valid for {expires} s from {}",
            signed.amz_date
        ))),
        _ => Ok(()),
    }
}

/// What the request says its payload's hash is.
enum DeclaredPayload {
    /// A hex SHA-256 the signature covers; the body must hash to it.
    Hash(String),
    /// `UNSIGNED-PAYLOAD`: the signature covers no body, so there must be
    /// none; the action and its parameters come from the signed URL.
    Unsigned,
    /// Nothing declared: the signature covers the body's hash.
    Body,
    /// A presigned URL that declares nothing: botocore signs the (empty)
    /// body's hash, S3-style presigners sign `UNSIGNED-PAYLOAD`. Either is
    /// accepted for an empty body; a body must hash to what was signed.
    PresignedBody,
}

impl DeclaredPayload {
    /// The payload hash as the canonical request has it, when the body is
    /// not needed to know it.
    fn signed_hash(&self) -> Option<String> {
        match self {
            DeclaredPayload::Hash(hash) => Some(hash.clone()),
            DeclaredPayload::Unsigned => Some(UNSIGNED_PAYLOAD.to_string()),
            DeclaredPayload::Body | DeclaredPayload::PresignedBody => None,
        }
    }
}

const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

fn declared_payload(signed: &Signed) -> Result<DeclaredPayload, SqsError> {
    match signed.content_sha256.as_deref() {
        None if signed.presigned() => Ok(DeclaredPayload::PresignedBody),
        None => Ok(DeclaredPayload::Body),
        Some(UNSIGNED_PAYLOAD) => Ok(DeclaredPayload::Unsigned),
        Some(hash) if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(DeclaredPayload::Hash(hash.to_ascii_lowercase()))
        }
        Some(other) => Err(SqsError::new(
            ErrorCode::SignatureDoesNotMatch,
            format!(
                "x-amz-content-sha256 must be the hex SHA-256 of the body or UNSIGNED-PAYLOAD, not {other:?}."
            ),
        )),
    }
}

/// A request whose signature's head checked out; [`HeadChecked::check_body`]
/// finishes the check once the body is read.
pub struct HeadChecked {
    signed: Signed,
    /// The canonical request up to (not including) the payload hash line.
    canonical_head: String,
    /// The derived signing key.
    key: Vec<u8>,
    payload: DeclaredPayload,
}

impl HeadChecked {
    /// The access key the request is signed with.
    pub fn access_key_id(&self) -> &str {
        &self.signed.access_key_id
    }

    /// Binds the body to the signature: it must hash to what was signed.
    pub fn check_body(self, body: &[u8]) -> Result<(), SqsError> {
        match &self.payload {
            DeclaredPayload::Hash(declared) => {
                if !constant_time_eq(hex::encode(Sha256::digest(body)).as_bytes(), declared.as_bytes()) {
                    return Err(SqsError::new(
                        ErrorCode::SignatureDoesNotMatch,
                        "The provided 'x-amz-content-sha256' header does not match what was computed from the body.",
                    ));
                }
                Ok(())
            }
            DeclaredPayload::Unsigned => {
                if !body.is_empty() {
                    return Err(SqsError::new(
                        ErrorCode::SignatureDoesNotMatch,
                        "The request is signed with UNSIGNED-PAYLOAD, so its body is not signed: send the \
                         parameters in the signed query string and no body.",
                    ));
                }
                Ok(())
            }
            DeclaredPayload::Body => self.check_signature(&hex::encode(Sha256::digest(body))),
            DeclaredPayload::PresignedBody => {
                let signed_body = self.check_signature(&hex::encode(Sha256::digest(body)));
                match signed_body {
                    Err(_) if body.is_empty() => self.check_signature(UNSIGNED_PAYLOAD),
                    result => result,
                }
            }
        }
    }

    fn check_signature(&self, payload_hash: &str) -> Result<(), SqsError> {
        let signed = &self.signed;
        let canonical = format!("{}{payload_hash}", self.canonical_head);
        let string_to_sign = format!(
            "{ALGORITHM}\n{}\n{}/{}/{}/{}\n{}",
            signed.amz_date,
            signed.scope_date,
            signed.region,
            signed.service,
            signed.terminator,
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
        let expected = hex::encode(hmac(&self.key, string_to_sign.as_bytes()));
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
    /// A presigned URL's lifetime in seconds (`X-Amz-Expires`); `None` for a
    /// request signed in its Authorization header.
    expires: Option<i64>,
    /// The payload hash the request declares: the `x-amz-content-sha256`
    /// header or, presigned, the `X-Amz-Content-Sha256` parameter.
    content_sha256: Option<String>,
}

impl Signed {
    /// Signed in the query string rather than in the Authorization header.
    fn presigned(&self) -> bool {
        self.expires.is_some()
    }

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
        let content_sha256 = headers
            .get("x-amz-content-sha256")
            .map(|value| value.to_str().unwrap_or_default().to_string());
        let (credential, signed_headers, signature, amz_date, expires, content_sha256) =
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
                    None,
                    content_sha256,
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
                let expires = field("X-Amz-Expires")?
                    .parse::<i64>()
                    .ok()
                    .filter(|seconds| (1..=MAX_PRESIGNED_EXPIRY_SECONDS).contains(seconds))
                    .ok_or_else(|| {
                        malformed("X-Amz-Expires must be a whole number of seconds from 1 to 604800")
                    })?;
                (
                    field("X-Amz-Credential")?,
                    field("X-Amz-SignedHeaders")?,
                    field("X-Amz-Signature")?,
                    field("X-Amz-Date")?,
                    Some(expires),
                    content_sha256.or_else(|| query.get("X-Amz-Content-Sha256").cloned()),
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
            expires,
            content_sha256,
        })
    }
}

/// The canonical request up to its last line, the payload hash, which the
/// caller appends.
fn canonical_head(method: &Method, uri: &Uri, headers: &HeaderMap, signed: &Signed) -> String {
    let path = if uri.path().is_empty() { "/" } else { uri.path() };
    let canonical_path: Vec<String> = path.split('/').map(|segment| encode(&decode(segment))).collect();
    let mut query: Vec<(String, String)> =
        serde_urlencoded::from_str::<Vec<(String, String)>>(uri.query().unwrap_or_default())
            .unwrap_or_default()
            .into_iter()
            .filter(|(key, _)| !(signed.presigned() && key == "X-Amz-Signature"))
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
    format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{}\n",
        canonical_path.join("/"),
        query.join("&"),
        signed.signed_headers.join(";")
    )
}

/// What SigV4 percent-encodes: everything but RFC 3986's unreserved
/// characters (letters, digits, `-`, `_`, `.`, `~`).
const SIGV4_ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn encode(text: &str) -> String {
    utf8_percent_encode(text, SIGV4_ENCODED).to_string()
}

/// Undoes percent-encoding of a path segment (so that it is encoded once).
fn decode(segment: &str) -> String {
    percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Whether `a` and `b` are equal, in time that does not depend on where
/// they differ: a secret or signature compared must not leak by timing.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
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

/// The region a request is signed for, read from its Authorization header
/// or its presigned query string (`X-Amz-Credential`), without checking
/// the signature: with credentials configured the signature is checked
/// separately, scope included; without, any signature is taken at its word.
pub fn signed_region(authorization: Option<&HeaderValue>, query: Option<&str>) -> Option<String> {
    let region = credential_part(authorization, query, 2)?;
    crate::queue::key::is_region(&region).then_some(region)
}

/// The access key id a request's signature names, read as [`signed_region`]
/// reads the region: for the audit trail, which records refused keys too.
pub fn signed_key_id(authorization: Option<&HeaderValue>, query: Option<&str>) -> Option<String> {
    credential_part(authorization, query, 0)
}

/// The service a request is signed for (`sqs` or `sns`), read as
/// [`signed_region`] reads the region: what tells SNS calls from SQS calls
/// where the action name could be either's.
pub fn signed_service(authorization: Option<&HeaderValue>, query: Option<&str>) -> Option<String> {
    credential_part(authorization, query, 3)
}

/// Part `index` of the credential, `<key id>/<date>/<region>/<service>/aws4_request`.
fn credential_part(authorization: Option<&HeaderValue>, query: Option<&str>, index: usize) -> Option<String> {
    let part = |credential: &[u8]| {
        let piece = credential
            .split(|&b| b == b'/' || b == b',' || b == b' ')
            .nth(index)?;
        std::str::from_utf8(piece).ok().map(str::to_string)
    };
    match authorization {
        Some(authorization) => {
            // The SDKs' layout, with the credential first, is read without
            // a search.
            let bytes = authorization.as_bytes();
            let credential = match bytes.strip_prefix(b"AWS4-HMAC-SHA256 Credential=") {
                Some(credential) => credential,
                None => {
                    let text = authorization.to_str().ok()?;
                    &bytes[text.find("Credential=")? + "Credential=".len()..]
                }
            };
            part(credential)
        }
        None => serde_urlencoded::from_str::<Vec<(String, String)>>(query?)
            .ok()?
            .into_iter()
            .find_map(|(name, value)| (name == "X-Amz-Credential").then(|| part(value.as_bytes())))?,
    }
}

/// What a key's admin grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdminGrant {
    /// Every account, and the instance itself (the snapshot).
    All,
    /// The key's own account.
    Account,
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
            hex::encode(&key),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        assert_eq!(encode("a b/c~"), "a%20b%2Fc~");
        assert_eq!(encode("é*"), "%C3%A9%2A");
        // A path segment is decoded once before it is encoded: what is not
        // a valid escape stays as sent.
        assert_eq!(decode("a%20b%2f%zz%4"), "a b/%zz%4");
        assert_eq!(encode(&decode("q%2Dname")), "q-name");
    }

    /// Signs a POST of `body` to `/` with `signed_headers`, using this
    /// module's canonical form, as a client that signs them would.
    fn signed_headers_request(signed_headers: &str, body: &[u8], now: i64) -> HeaderMap {
        let amz_date = "20231114T221320Z"; // 1_700_000_000
        assert_eq!(parse_amz_date(amz_date), Some(now));
        let mut headers = HeaderMap::new();
        headers.insert("host", "127.0.0.1:9324".parse().unwrap());
        headers.insert("x-amz-date", amz_date.parse().unwrap());
        let authorization = |signature: &str| {
            format!(
                "{ALGORITHM} Credential=AKID/20231114/us-east-1/sqs/aws4_request, SignedHeaders={signed_headers}, Signature={signature}"
            )
        };
        headers.insert("authorization", authorization("00").parse().unwrap());
        let uri = Uri::from_static("/");
        let signed = Signed::from_request(&uri, &headers).unwrap();
        let canonical =
            canonical_head(&Method::POST, &uri, &headers, &signed) + &hex::encode(Sha256::digest(body));
        let string_to_sign = format!(
            "{ALGORITHM}\n{amz_date}\n20231114/us-east-1/sqs/aws4_request\n{}",
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
        let mut key = hmac(b"AWS4secret", b"20231114");
        for part in ["us-east-1", "sqs", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        let signature = hex::encode(hmac(&key, string_to_sign.as_bytes()));
        headers.insert("authorization", authorization(&signature).parse().unwrap());
        headers
    }

    #[test]
    fn the_host_header_must_be_signed() {
        let credentials = crate::http::intake::credentials_file::parse("AKID:secret").unwrap();
        let now = 1_700_000_000;
        let body = b"Action=ListQueues";
        let uri = Uri::from_static("/");
        let with_host = signed_headers_request("host;x-amz-date", body, now);
        assert_eq!(
            credentials.verify(&Method::POST, &uri, &with_host, body, Some("us-east-1"), now),
            Ok(())
        );
        let without_host = signed_headers_request("x-amz-date", body, now);
        let error = credentials
            .verify(&Method::POST, &uri, &without_host, body, Some("us-east-1"), now)
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::SignatureDoesNotMatch);
        assert!(error.message.contains("host header must be signed"), "{error}");
        let error = credentials
            .verify(
                &Method::POST,
                &uri,
                &with_host,
                b"Action=DeleteQueue",
                Some("us-east-1"),
                now,
            )
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::SignatureDoesNotMatch, "the body is signed");
    }

    #[test]
    fn the_signed_region_is_read_from_the_header_or_the_presigned_query() {
        let header = HeaderValue::from_static(
            "AWS4-HMAC-SHA256 Credential=AKID/20261201/eu-north-1/sqs/aws4_request, SignedHeaders=host, Signature=00",
        );
        assert_eq!(signed_region(Some(&header), None).as_deref(), Some("eu-north-1"));
        let presigned =
            "Action=ListQueues&X-Amz-Credential=AKID%2F20261201%2Fap-south-2%2Fsqs%2Faws4_request";
        assert_eq!(
            signed_region(None, Some(presigned)).as_deref(),
            Some("ap-south-2")
        );
        assert_eq!(signed_region(None, None), None, "unsigned");
        let odd = HeaderValue::from_static("AWS4-HMAC-SHA256 Credential=AKID/x/NOT A REGION/sqs");
        assert_eq!(signed_region(Some(&odd), None), None);
        let later =
            HeaderValue::from_static("AWS4-HMAC-SHA256 SignedHeaders=host, Credential=AKID/x/us-west-2/sqs");
        assert_eq!(
            signed_region(Some(&later), None).as_deref(),
            Some("us-west-2"),
            "found where it is"
        );
    }
}
