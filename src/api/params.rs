//! Parameter checks every action shares: required members, integer ranges
//! worded as SQS words them, and the MaxResults/NextToken paging of the
//! listing actions.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::error::{Result, SqsError};

pub(super) fn required<T>(value: Option<T>, name: &str) -> Result<T> {
    value.ok_or_else(|| SqsError::missing_parameter(name))
}

/// Checks an integer parameter against its range, as SQS words it.
pub(super) fn in_range(value: i64, name: &str, min: i64, max: i64) -> Result<u32> {
    if (min..=max).contains(&value) {
        Ok(value as u32)
    } else {
        Err(SqsError::invalid_parameter(format!(
            "Value {value} for parameter {name} is invalid. Reason: Must be between {min} and {max}, if provided."
        )))
    }
}

/// The same, in the words AWS uses for WaitTimeSeconds.
pub(super) fn within(value: i64, name: &str, min: i64, max: i64) -> Result<u32> {
    in_range(value, name, min, max).map_err(|_| {
        SqsError::invalid_parameter(format!(
            "Value {value} for parameter {name} is invalid. Reason: Must be >= {min} and <= {max}, if provided."
        ))
    })
}

/// ListQueues answers at most this many URLs.
pub(super) const MAX_LIST_RESULTS: usize = 1_000;

/// MaxResults and NextToken of the listing actions.
pub(super) struct Page {
    pub(super) limit: usize,
    /// The last name of the previous page.
    pub(super) after: Option<String>,
    /// Whether the caller asked for pages (only then is a NextToken given).
    paged: bool,
}

impl Page {
    pub(super) fn parse(max_results: Option<i64>, next_token: Option<&str>) -> Result<Page> {
        let limit = match max_results {
            Some(n) => in_range(n, "MaxResults", 1, MAX_LIST_RESULTS as i64)? as usize,
            None => MAX_LIST_RESULTS,
        };
        let after = next_token.map(decode_token).transpose()?;
        Ok(Page {
            limit,
            after,
            paged: max_results.is_some(),
        })
    }

    /// Cuts names in order, all after `after`, to the page, with the token
    /// for the next page if more follow.
    pub(super) fn cut(&self, mut names: Vec<String>) -> (Vec<String>, Option<String>) {
        let more = names.len() > self.limit;
        names.truncate(self.limit);
        let token = (more && self.paged)
            .then(|| names.last().map(|last| BASE64.encode(last)))
            .flatten();
        (names, token)
    }
}

pub(super) fn decode_token(token: &str) -> Result<String> {
    BASE64
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            SqsError::invalid_parameter(
                "Invalid NextToken value: pass the token a previous ListQueues returned.",
            )
        })
}
