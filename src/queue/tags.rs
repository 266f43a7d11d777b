//! Queue tags (cost-allocation tags): at most 50 per queue, keys of 1 to 128
//! characters, values of up to 256.

use std::collections::BTreeMap;

use crate::error::{Result, SqsError};

pub const MAX_TAGS: usize = 50;

pub fn validate(tags: &BTreeMap<String, String>) -> Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(SqsError::invalid_parameter(format!(
            "Too many tags: a queue can have at most {MAX_TAGS}, this would give it {}.",
            tags.len()
        )));
    }
    for (key, value) in tags {
        if key.is_empty() || key.chars().count() > 128 {
            return Err(SqsError::invalid_parameter(
                "Tag keys must be 1 to 128 characters long.",
            ));
        }
        if !super::message::is_xml_text(key) || !super::message::is_xml_text(value) {
            return Err(SqsError::invalid_parameter(format!(
                "The tag {key:?} has characters SQS does not allow in its key or value."
            )));
        }
        if value.chars().count() > 256 {
            return Err(SqsError::invalid_parameter(format!(
                "The value of tag {key} is longer than 256 characters."
            )));
        }
    }
    Ok(())
}

/// Adds or replaces `new` tags on `existing`, refusing a result over the cap.
pub fn merge(existing: &mut BTreeMap<String, String>, new: BTreeMap<String, String>) -> Result<()> {
    validate(&new)?;
    let mut merged = existing.clone();
    merged.extend(new);
    validate(&merged)?;
    *existing = merged;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_hold_across_merges() {
        let mut tags: BTreeMap<String, String> = (0..49).map(|i| (format!("k{i}"), String::new())).collect();
        merge(&mut tags, BTreeMap::from([("k0".into(), "replaced".into())])).unwrap();
        merge(&mut tags, BTreeMap::from([("new".into(), "v".into())])).unwrap();
        assert_eq!(tags.len(), 50);
        assert!(merge(&mut tags, BTreeMap::from([("one-too-many".into(), "v".into())])).is_err());
        assert_eq!(tags.len(), 50, "a refused merge changes nothing");
        assert!(validate(&BTreeMap::from([(String::new(), "v".into())])).is_err());
        assert!(validate(&BTreeMap::from([("k".into(), "v".repeat(257))])).is_err());
        assert!(validate(&BTreeMap::from([("k\u{1}".into(), "v".into())])).is_err());
        assert!(validate(&BTreeMap::from([("k".into(), "v\u{0}".into())])).is_err());
    }
}
