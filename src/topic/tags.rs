//! Topic tags: AWS's limits (50 a resource, keys of 1 to 128 characters,
//! values of at most 256) and its errors.

use super::error::{Result, SnsError};

const MAX_TAGS: usize = 50;
const MAX_KEY_CHARS: usize = 128;
const MAX_VALUE_CHARS: usize = 256;

/// Checks the tags a call gives: no key twice, each key and value within
/// its length.
pub fn check_tags(tags: &[(String, String)]) -> Result<()> {
    let mut keys: Vec<&str> = tags.iter().map(|(key, _)| key.as_str()).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(SnsError::parameter("Duplicated keys are not allowed."));
    }
    for (key, value) in tags {
        if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
            return Err(SnsError::parameter(
                "TagKey Reason: must be between 1 and 128 characters",
            ));
        }
        if value.chars().count() > MAX_VALUE_CHARS {
            return Err(SnsError::parameter(
                "TagValue Reason: must be at most 256 characters",
            ));
        }
    }
    check_count(tags.len())
}

pub(super) fn check_count(count: usize) -> Result<()> {
    match count > MAX_TAGS {
        true => Err(SnsError::new(
            "TagLimitExceeded",
            400,
            "Could not complete request: tag quota of per resource exceeded",
        )),
        false => Ok(()),
    }
}

pub(super) fn resource_not_found() -> SnsError {
    SnsError::new("ResourceNotFound", 404, "Resource does not exist")
}
