//! AWS Signature Version 4 for the load's requests (`--sign KEY:SECRET`),
//! so that a server that checks signatures (ssq with `--credentials`) can
//! be measured: the headers `host` and `x-amz-date` and the body's SHA-256
//! signed, as the SDKs sign a JSON-protocol call. The signing key is
//! derived once a day, as the SDKs cache it.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

pub struct Signer {
    access_key_id: String,
    secret: String,
    region: String,
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

impl Signer {
    /// From `KEY:SECRET`.
    pub fn parse(text: &str, region: &str) -> Option<Signer> {
        let (access_key_id, secret) = text.split_once(':')?;
        Some(Signer {
            access_key_id: access_key_id.to_string(),
            secret: secret.to_string(),
            region: region.to_string(),
        })
    }

    /// The `x-amz-date` and `authorization` headers of a POST to `/` on
    /// `host` with `body`, signed now.
    pub fn sign(&self, host: &str, body: &[u8]) -> (String, String) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        let amz_date = amz_date(now);
        let date = &amz_date[..8];
        let payload = hex::encode(Sha256::digest(body));
        let canonical =
            format!("POST\n/\n\nhost:{host}\nx-amz-date:{amz_date}\n\nhost;x-amz-date\n{payload}");
        let scope = format!("{date}/{}/sqs/aws4_request", self.region);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
        let mut key = hmac(format!("AWS4{}", self.secret).as_bytes(), date.as_bytes());
        for part in [self.region.as_str(), "sqs", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        let signature = hex::encode(hmac(&key, to_sign.as_bytes()));
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders=host;x-amz-date, Signature={signature}",
            self.access_key_id
        );
        (amz_date, authorization)
    }
}

/// `YYYYMMDDTHHMMSSZ` of Unix seconds (the civil date from days, Howard
/// Hinnant's algorithm).
fn amz_date(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_civil() {
        assert_eq!(super::amz_date(0), "19700101T000000Z");
        assert_eq!(super::amz_date(1_780_000_000), "20260528T202640Z");
    }
}
