//! The JSON documents SNS delivers: a Notification (what a subscribed queue
//! or webhook receives unless it asked for raw delivery), a
//! SubscriptionConfirmation and an UnsubscribeConfirmation, laid out as AWS
//! lays them out and signed as AWS signs them (SignatureVersion 1: SHA1
//! with RSA, 2: SHA256 with RSA, over the documented string to sign).

use std::collections::BTreeMap;

use base64::Engine as _;

use crate::queue::{AttributeValue, MessageAttributes};

/// What signs documents: the key whose certificate ssq serves at
/// [`Sign::certificate_url`].
pub trait Sign: Send + Sync {
    /// The base64 signature of `text` with SHA1 (version 1) or SHA256
    /// (version 2) and RSA.
    fn sign(&self, version: u8, text: &[u8]) -> String;
    /// Where the certificate is served, as `SigningCertURL` gives it.
    fn certificate_url(&self, base_url: &str) -> String;
}

/// A document's members, in the order AWS writes them. Values are text,
/// except `MessageAttributes`, written as an object.
pub struct Envelope {
    fields: Vec<(&'static str, String)>,
    attributes: Option<BTreeMap<String, (String, String)>>,
}

/// What a Notification is made of.
pub struct Notification<'a> {
    pub message_id: &'a str,
    pub topic_arn: &'a str,
    pub subject: Option<&'a str>,
    pub message: &'a str,
    /// ISO 8601 with milliseconds, UTC.
    pub timestamp: &'a str,
    /// FIFO topics: the message's sequence number on the topic.
    pub sequence_number: Option<&'a str>,
    pub attributes: &'a MessageAttributes,
    pub signature_version: u8,
    pub unsubscribe_url: &'a str,
    /// Sent again from a FIFO topic's archive (a replay).
    pub replayed: bool,
}

impl Notification<'_> {
    /// What AWS signs of a Notification: the same for every subscription
    /// that receives the same message (the UnsubscribeURL is not signed),
    /// so that a Publish signs once, however many queues it reaches.
    pub fn string_to_sign(&self) -> String {
        let mut signed = vec![("Message", self.message), ("MessageId", self.message_id)];
        if let Some(subject) = self.subject {
            signed.push(("Subject", subject));
        }
        signed.extend([
            ("Timestamp", self.timestamp),
            ("TopicArn", self.topic_arn),
            ("Type", "Notification"),
        ]);
        string_to_sign(&signed)
    }
}

/// A Notification's signature, made once with [`Sign::sign`] over
/// [`Notification::string_to_sign`], and where its certificate is.
pub struct Signature<'a> {
    pub value: &'a str,
    pub certificate_url: &'a str,
}

impl Envelope {
    /// A Notification; `signature` is `None` for a FIFO topic's, which AWS
    /// does not sign.
    pub fn notification(notification: &Notification<'_>, signature: Option<&Signature<'_>>) -> Envelope {
        let n = notification;
        let mut fields = vec![
            ("Type", "Notification".to_string()),
            ("MessageId", n.message_id.to_string()),
        ];
        if let Some(sequence) = n.sequence_number {
            fields.push(("SequenceNumber", sequence.to_string()));
        }
        fields.push(("TopicArn", n.topic_arn.to_string()));
        if let Some(subject) = n.subject {
            fields.push(("Subject", subject.to_string()));
        }
        fields.extend([
            ("Message", n.message.to_string()),
            ("Timestamp", n.timestamp.to_string()),
        ]);
        if n.replayed {
            fields.push(("Replayed", "true".to_string()));
        }
        if let Some(signature) = signature {
            fields.extend([
                ("SignatureVersion", n.signature_version.to_string()),
                ("Signature", signature.value.to_string()),
                ("SigningCertURL", signature.certificate_url.to_string()),
            ]);
        }
        fields.push(("UnsubscribeURL", n.unsubscribe_url.to_string()));
        let attributes = (!n.attributes.is_empty()).then(|| {
            n.attributes
                .iter()
                .map(|(name, attribute)| {
                    let value = match &attribute.value {
                        AttributeValue::String(text) => text.clone(),
                        AttributeValue::Binary(bytes) => {
                            base64::engine::general_purpose::STANDARD.encode(bytes)
                        }
                    };
                    let kind = attribute.data_type.clone();
                    (name.clone(), (kind, value))
                })
                .collect()
        });
        Envelope { fields, attributes }
    }

    /// A SubscriptionConfirmation or an UnsubscribeConfirmation (`kind`),
    /// with the URL that confirms (or subscribes again).
    pub fn confirmation(
        kind: &'static str,
        confirmation: &Confirmation<'_>,
        signer: &dyn Sign,
        base_url: &str,
    ) -> Envelope {
        let c = confirmation;
        let signed = [
            ("Message", c.message),
            ("MessageId", c.message_id),
            ("SubscribeURL", c.subscribe_url),
            ("Timestamp", c.timestamp),
            ("Token", c.token),
            ("TopicArn", c.topic_arn),
            ("Type", kind),
        ];
        let signature = signer.sign(c.signature_version, string_to_sign(&signed).as_bytes());
        let fields = vec![
            ("Type", kind.to_string()),
            ("MessageId", c.message_id.to_string()),
            ("Token", c.token.to_string()),
            ("TopicArn", c.topic_arn.to_string()),
            ("Message", c.message.to_string()),
            ("SubscribeURL", c.subscribe_url.to_string()),
            ("Timestamp", c.timestamp.to_string()),
            ("SignatureVersion", c.signature_version.to_string()),
            ("Signature", signature),
            ("SigningCertURL", signer.certificate_url(base_url)),
        ];
        Envelope {
            fields,
            attributes: None,
        }
    }

    /// The document as AWS writes it: one member a line, `"Name" : value`.
    pub fn to_json(&self) -> String {
        let text = |value: &str| serde_json::Value::from(value).to_string();
        let mut members: Vec<String> = self
            .fields
            .iter()
            .map(|(name, value)| format!("  \"{name}\" : {}", text(value)))
            .collect();
        if let Some(attributes) = &self.attributes {
            let inner: Vec<String> = attributes
                .iter()
                .map(|(name, (kind, value))| {
                    format!(
                        "    {} : {{\"Type\":{},\"Value\":{}}}",
                        text(name),
                        text(kind),
                        text(value)
                    )
                })
                .collect();
            members.push(format!(
                "  \"MessageAttributes\" : {{\n{}\n  }}",
                inner.join(",\n")
            ));
        }
        format!("{{\n{}\n}}", members.join(",\n"))
    }

    /// A member's value (the HTTP headers repeat some).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a confirmation document is made of.
pub struct Confirmation<'a> {
    pub message_id: &'a str,
    pub token: &'a str,
    pub topic_arn: &'a str,
    pub message: &'a str,
    pub subscribe_url: &'a str,
    pub timestamp: &'a str,
    pub signature_version: u8,
}

/// A time as SNS writes it: ISO 8601 in UTC with milliseconds,
/// `2026-12-04T09:30:00.123Z`.
pub fn timestamp(millis: u64) -> String {
    let seconds = millis / 1000;
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        millis % 1000
    )
}

/// AWS's string to sign: each member's name and value, a line each.
fn string_to_sign(members: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (name, value) in members {
        text.push_str(name);
        text.push('\n');
        text.push_str(value);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::MessageAttribute;

    struct Plain;

    impl Sign for Plain {
        fn sign(&self, version: u8, text: &[u8]) -> String {
            format!("v{version}:{}", text.len())
        }
        fn certificate_url(&self, base_url: &str) -> String {
            format!("{base_url}/SimpleNotificationService-test.pem")
        }
    }

    #[test]
    fn timestamps_are_iso_8601_in_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(timestamp(1_796_380_245_007), "2026-12-04T10:30:45.007Z");
    }

    #[test]
    fn a_notification_is_laid_out_and_signed_as_aws_does() {
        let mut attributes = MessageAttributes::new();
        attributes.insert(
            "n".into(),
            MessageAttribute {
                data_type: "Number".into(),
                value: AttributeValue::String("1".into()),
            },
        );
        let notification = Notification {
            message_id: "id",
            topic_arn: "arn:aws:sns:r:1:t",
            subject: Some("s"),
            message: "m \"q\"",
            timestamp: "2026-12-04T00:00:00.000Z",
            sequence_number: None,
            attributes: &attributes,
            signature_version: 1,
            unsubscribe_url: "http://h/?Action=Unsubscribe",
            replayed: false,
        };
        let value = Plain.sign(1, notification.string_to_sign().as_bytes());
        let url = Plain.certificate_url("http://h");
        let signature = Signature {
            value: &value,
            certificate_url: &url,
        };
        let envelope = Envelope::notification(&notification, Some(&signature));
        let json: serde_json::Value = serde_json::from_str(&envelope.to_json()).unwrap();
        assert_eq!(json["Message"], "m \"q\"");
        assert_eq!(json["MessageAttributes"]["n"]["Type"], "Number");
        let signed = "Message\nm \"q\"\nMessageId\nid\nSubject\ns\nTimestamp\n2026-12-04T00:00:00.000Z\nTopicArn\narn:aws:sns:r:1:t\nType\nNotification\n";
        assert_eq!(json["Signature"], format!("v1:{}", signed.len()));
        assert!(
            envelope
                .to_json()
                .starts_with("{\n  \"Type\" : \"Notification\",\n  \"MessageId\" : \"id\"")
        );
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 11);
    }
}
