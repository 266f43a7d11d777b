//! A FIFO topic's message archive (its `ArchivePolicy`) and the replays it
//! feeds (a subscription's `ReplayPolicy`), as AWS has them.
//!
//! With an archive policy, every publication the topic sequences is kept
//! for the policy's days, each a small record of its own (`records.rs`),
//! and counted in what the instance holds (`--max-messages`,
//! `--max-bytes`). A replay policy on a subscription sends the archived
//! publications from its starting point again, in order, through the
//! subscription's filter, with the MessageId and Timestamp they first had
//! and `"Replayed": true` in their envelope. While it runs, the topic's new
//! publications reach the subscription through the archive, after the
//! replayed ones; once it has caught up it delivers them directly again
//! (status `Completed`), or, with an ending point, no more.

use std::collections::BTreeMap;
use std::ops::Bound;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::error::{Result, SnsError};
use super::publish::{AttributeInput, Publication, PublishInput, Rules};
use crate::queue::AttributeValue;

/// AWS's bounds on MessageRetentionPeriod, in days.
const RETENTION_DAYS: std::ops::RangeInclusive<u64> = 1..=365;
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// The retention an ArchivePolicy sets, in milliseconds; `None` for `{}`,
/// which turns archiving off.
pub fn retention(value: &str) -> Result<Option<u64>> {
    let invalid = |reason: &str| SnsError::parameter(format!("ArchivePolicy Reason: {reason}"));
    let policy: serde_json::Map<String, Value> =
        serde_json::from_str(value).map_err(|_| invalid("failed to parse JSON"))?;
    if let Some(unknown) = policy.keys().find(|key| *key != "MessageRetentionPeriod") {
        return Err(invalid(&format!("unknown field {unknown}")));
    }
    let Some(period) = policy.get("MessageRetentionPeriod") else {
        return Ok(None);
    };
    let days = match period {
        Value::String(text) => text.parse::<u64>().ok(),
        Value::Number(number) => number.as_u64(),
        _ => None,
    };
    match days {
        Some(days) if RETENTION_DAYS.contains(&days) => Ok(Some(days * DAY_MS)),
        _ => Err(invalid(
            "MessageRetentionPeriod must be a number of days from 1 to 365",
        )),
    }
}

/// One archived publication, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Archived {
    pub sequence: u64,
    pub message_id: String,
    /// When it was published (its envelope's Timestamp), in milliseconds.
    pub at: u64,
    /// As published: a JSON structure's text when `structured`.
    pub message: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, ArchivedAttribute>,
    pub group_id: Option<String>,
    pub dedup_id: Option<String>,
}

/// A message attribute of an archived publication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedAttribute {
    pub data_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
}

impl Archived {
    pub fn of(publication: &Publication, sequence: u64, message_id: &str, at: u64) -> Archived {
        let attributes = publication
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let (text, binary) = match &attribute.value {
                    AttributeValue::String(text) => (Some(text.clone()), None),
                    AttributeValue::Binary(bytes) => (None, Some(BASE64.encode(bytes))),
                };
                let archived = ArchivedAttribute {
                    data_type: attribute.data_type.clone(),
                    text,
                    binary,
                };
                (name.clone(), archived)
            })
            .collect();
        let (message, structured) = match &publication.by_protocol {
            Some(structure) => (Value::Object(structure.clone()).to_string(), true),
            None => (publication.message.clone(), false),
        };
        Archived {
            sequence,
            message_id: message_id.to_string(),
            at,
            message,
            structured,
            subject: publication.subject.clone(),
            attributes,
            group_id: publication.group_id.clone(),
            dedup_id: publication.dedup_id.clone(),
        }
    }

    /// The publication again, checked as a Publish is.
    pub fn publication(&self) -> Result<Publication> {
        let attributes = self
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let binary = match &attribute.binary {
                    Some(text) => Some(
                        BASE64
                            .decode(text)
                            .map_err(|_| SnsError::parameter("archived binary attribute"))?,
                    ),
                    None => None,
                };
                let input = AttributeInput {
                    data_type: Some(attribute.data_type.clone()),
                    string_value: attribute.text.clone(),
                    binary_value: binary,
                };
                Ok((name.clone(), input))
            })
            .collect::<Result<_>>()?;
        let input = PublishInput {
            message: Some(self.message.clone()),
            subject: self.subject.clone(),
            message_structure: self.structured.then(|| "json".to_string()),
            attributes,
            group_id: self.group_id.clone(),
            dedup_id: self.dedup_id.clone(),
        };
        Publication::check(input, Rules::archived(), "")
    }

    /// What it counts for in `--max-bytes`: its message and attributes.
    pub fn size(&self) -> u64 {
        let attributes: usize = self
            .attributes
            .iter()
            .map(|(name, attribute)| {
                name.len()
                    + attribute.data_type.len()
                    + attribute.text.as_ref().map_or(0, String::len)
                    + attribute.binary.as_ref().map_or(0, |b| b.len() * 3 / 4)
            })
            .sum();
        (self.message.len() + attributes) as u64
    }
}

/// A topic's archive: its retention, since when it keeps publications, and
/// those it keeps, by sequence number.
#[derive(Debug, Clone, Default)]
pub struct Archive {
    pub retention_ms: u64,
    /// When archiving was turned on, in milliseconds.
    pub since: u64,
    entries: BTreeMap<u64, Archived>,
    bytes: u64,
}

impl Archive {
    pub fn new(retention_ms: u64, since: u64) -> Archive {
        Archive {
            retention_ms,
            since,
            ..Archive::default()
        }
    }

    pub fn push(&mut self, archived: Archived) {
        self.bytes += archived.size();
        if let Some(old) = self.entries.insert(archived.sequence, archived) {
            self.bytes -= old.size();
        }
    }

    /// Drops what is past retention at `now`; the sequence numbers dropped.
    pub fn expire(&mut self, now: u64) -> Vec<u64> {
        let mut dropped = Vec::new();
        while let Some(entry) = self.entries.first_entry() {
            if entry.get().at.saturating_add(self.retention_ms) > now {
                break;
            }
            let archived = entry.remove();
            self.bytes -= archived.size();
            dropped.push(archived.sequence);
        }
        dropped
    }

    /// Every sequence number held (to delete them all).
    pub fn sequences(&self) -> Vec<u64> {
        self.entries.keys().copied().collect()
    }

    /// At most `max` publications after sequence number `after`.
    pub fn after(&self, after: u64, max: usize) -> impl Iterator<Item = &Archived> {
        self.entries
            .range((Bound::Excluded(after), Bound::Unbounded))
            .map(|(_, archived)| archived)
            .take(max)
    }

    /// Whether it holds a publication of sequence number `sequence`.
    pub fn holds(&self, sequence: u64) -> bool {
        self.entries.contains_key(&sequence)
    }

    /// How many publications it holds, and their bytes.
    pub fn holding(&self) -> (u64, u64) {
        (self.entries.len() as u64, self.bytes)
    }

    /// BeginningArchiveTime: the earliest point a replay may start from.
    pub fn beginning(&self, now: u64) -> u64 {
        self.since.max(now.saturating_sub(self.retention_ms))
    }
}

/// Reads a ReplayPolicy: `{"PointType": "Timestamp", "StartingPoint": T,
/// "EndingPoint": T}` with RFC 3339 times, the ending point optional. The
/// start may not be before the archive's beginning (`beginning`) nor after
/// `now`, as AWS has it.
pub fn replay_policy(value: &str, beginning: Option<u64>, now: u64) -> Result<(u64, Option<u64>)> {
    let invalid = |reason: &str| SnsError::parameter(format!("ReplayPolicy Reason: {reason}"));
    let policy: serde_json::Map<String, Value> =
        serde_json::from_str(value).map_err(|_| invalid("failed to parse JSON"))?;
    if let Some(unknown) = policy
        .keys()
        .find(|key| !matches!(key.as_str(), "PointType" | "StartingPoint" | "EndingPoint"))
    {
        return Err(invalid(&format!("unknown field {unknown}")));
    }
    if policy.get("PointType").and_then(Value::as_str) != Some("Timestamp") {
        return Err(invalid("PointType must be Timestamp"));
    }
    let time = |name: &str| -> Result<Option<u64>> {
        let Some(value) = policy.get(name) else {
            return Ok(None);
        };
        let parsed = value
            .as_str()
            .and_then(|text| OffsetDateTime::parse(text, &Rfc3339).ok())
            .and_then(|at| u64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok());
        match parsed {
            Some(millis) => Ok(Some(millis)),
            None => Err(invalid(&format!(
                "{name} must be a time as RFC 3339 writes it, such as 2026-12-04T10:00:00Z"
            ))),
        }
    };
    let from = time("StartingPoint")?.ok_or_else(|| invalid("StartingPoint is required"))?;
    let to = time("EndingPoint")?;
    let Some(beginning) = beginning else {
        return Err(invalid("the topic has no ArchivePolicy to replay from"));
    };
    if from < beginning {
        return Err(invalid(&format!(
            "StartingPoint is before the archive's beginning, {}",
            super::envelope::timestamp(beginning)
        )));
    }
    if from > now {
        return Err(invalid("StartingPoint is in the future"));
    }
    if to.is_some_and(|to| to < from) {
        return Err(invalid("EndingPoint is before StartingPoint"));
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_policies_are_read_as_aws_bounds_them() {
        assert_eq!(
            retention(r#"{"MessageRetentionPeriod":"30"}"#).unwrap(),
            Some(30 * DAY_MS)
        );
        assert_eq!(
            retention(r#"{"MessageRetentionPeriod":365}"#).unwrap(),
            Some(365 * DAY_MS)
        );
        assert_eq!(retention("{}").unwrap(), None);
        for wrong in [
            r#"{"MessageRetentionPeriod":"0"}"#,
            r#"{"MessageRetentionPeriod":"366"}"#,
            r#"{"MessageRetentionPeriod":"ten"}"#,
            r#"{"Retention":"3"}"#,
            "[]",
        ] {
            assert!(retention(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn an_archive_expires_in_order_and_counts_what_it_holds() {
        let publication = Publication::check(
            PublishInput {
                message: Some("hello".into()),
                group_id: Some("g".into()),
                dedup_id: Some("d".into()),
                ..PublishInput::default()
            },
            Rules::archived(),
            "",
        )
        .unwrap();
        let mut archive = Archive::new(DAY_MS, 1_000);
        for (sequence, at) in [(1, 1_000), (2, 5_000), (3, 9_000)] {
            archive.push(Archived::of(&publication, sequence, "id", at));
        }
        assert_eq!(archive.holding(), (3, 15));
        assert_eq!(archive.expire(DAY_MS + 5_000), vec![1, 2]);
        assert_eq!(archive.holding(), (1, 5));
        let rest: Vec<u64> = archive.after(0, 10).map(|a| a.sequence).collect();
        assert_eq!(rest, vec![3]);
        assert_eq!(archive.beginning(DAY_MS + 5_000), 5_000);
        let again = archive.after(0, 1).next().unwrap().publication().unwrap();
        assert_eq!(
            (again.message.as_str(), again.group_id.as_deref()),
            ("hello", Some("g"))
        );
    }

    #[test]
    fn replay_policies_start_within_the_archive() {
        let now = 1_796_380_245_000; // 2026-12-04T10:30:45Z
        let policy = |start: &str, end: &str| {
            let end = match end {
                "" => String::new(),
                end => format!(r#","EndingPoint":"{end}""#),
            };
            format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}"{end}}}"#)
        };
        let beginning = Some(now - DAY_MS);
        assert_eq!(
            replay_policy(&policy("2026-12-04T10:00:00Z", ""), beginning, now).unwrap(),
            (now - 1_845_000, None)
        );
        assert_eq!(
            replay_policy(
                &policy("2026-12-04T10:00:00Z", "2026-12-04T10:30:00.500Z"),
                beginning,
                now
            )
            .unwrap()
            .1,
            Some(now - 44_500)
        );
        for (text, why) in [
            (policy("2026-12-01T00:00:00Z", ""), "before the archive"),
            (policy("2026-12-05T00:00:00Z", ""), "in the future"),
            (policy("yesterday", ""), "RFC 3339"),
            (
                policy("2026-12-04T10:00:00Z", "2026-12-04T09:00:00Z"),
                "before StartingPoint",
            ),
            (
                r#"{"PointType":"Sequence","StartingPoint":"x"}"#.into(),
                "Timestamp",
            ),
        ] {
            let error = replay_policy(&text, beginning, now).unwrap_err();
            assert!(error.message.contains(why), "{text}: {}", error.message);
        }
        let error = replay_policy(&policy("2026-12-04T10:00:00Z", ""), None, now).unwrap_err();
        assert!(error.message.contains("no ArchivePolicy"), "{}", error.message);
    }
}
