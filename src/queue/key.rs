//! Queue keys: how one instance names the queues of every region.
//!
//! A queue belongs to a region, as in AWS: the same name in two regions is
//! two queues. A queue of the instance's own region (`--region`) is keyed by
//! its name alone, as every queue was before queues had regions, so stored
//! data and queue URLs of that region stay as they were; a queue of another
//! region is keyed `<region>/<name>`. A queue name never holds a `/`, so the
//! two forms never meet. The key is what the service, the store (Redis key
//! names), metrics and the admin page use; the API turns it into URLs and
//! ARNs.

/// The key of queue `name` in `region`, for an instance in `home_region`.
pub fn of(region: &str, home_region: &str, name: &str) -> String {
    if region == home_region {
        name.to_string()
    } else {
        format!("{region}/{name}")
    }
}

/// The region of a key (`None`: the instance's own) and the queue's name.
pub fn split(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((region, name)) => (Some(region), name),
        None => (None, key),
    }
}

/// The key of queue `name` in the same region as the queue keyed `key`:
/// a dead-letter queue and its sources share a region.
pub fn sibling(key: &str, name: &str) -> String {
    match split(key) {
        (Some(region), _) => format!("{region}/{name}"),
        (None, _) => name.to_string(),
    }
}

/// Whether `text` can be a region name (`us-east-1`, `eu-central-1`):
/// lower-case letters, digits and dashes, starting with a letter.
pub fn is_region(text: &str) -> bool {
    (1..=32).contains(&text.len())
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Queue names: 1 to 80 letters, digits, '-' and '_'; a FIFO queue's name
/// ends in `.fifo` (counted in the 80), and only a FIFO queue's may. The
/// error is AWS's for the kind of queue asked for, word for word (a
/// standard queue named `x.fifo` gets the standard queue's).
pub fn validate_name(name: &str, fifo: bool) -> crate::error::Result<()> {
    let base = match fifo {
        true => name.strip_suffix(".fifo"),
        false => Some(name),
    };
    let valid = (1..=80).contains(&name.len())
        && base.is_some_and(|base| {
            !base.is_empty()
                && base
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    match (valid, fifo) {
        (true, _) => Ok(()),
        (false, true) => Err(crate::error::SqsError::invalid_parameter(
            "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.",
        )),
        (false, false) => Err(crate::error::SqsError::invalid_parameter(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_region_queues_keep_their_bare_names() {
        assert_eq!(of("us-east-1", "us-east-1", "jobs"), "jobs");
        assert_eq!(of("eu-north-1", "us-east-1", "jobs"), "eu-north-1/jobs");
        assert_eq!(split("jobs"), (None, "jobs"));
        assert_eq!(split("eu-north-1/jobs"), (Some("eu-north-1"), "jobs"));
        assert_eq!(sibling("eu-north-1/jobs", "dead"), "eu-north-1/dead");
        assert_eq!(sibling("jobs", "dead"), "dead");
    }

    #[test]
    fn region_names_are_recognised() {
        for good in ["us-east-1", "eu-central-1", "local"] {
            assert!(is_region(good), "{good}");
        }
        for bad in ["", "US-EAST-1", "1abc", "eu/x", &"a".repeat(33)] {
            assert!(!is_region(bad), "{bad}");
        }
    }

    #[test]
    fn names_are_validated_with_the_words_of_their_kind_of_queue() {
        for good in ["a", "A-b_9", &"n".repeat(80)] {
            assert!(validate_name(good, false).is_ok());
            assert!(validate_name(&format!("{good}.fifo"), true).is_ok() || good.len() > 75);
        }
        assert!(validate_name(&format!("{}.fifo", "n".repeat(75)), true).is_ok());
        let standard = "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length";
        for bad in ["", "a.b", "sp ace", "é", &"n".repeat(81), "jobs.fifo"] {
            assert_eq!(validate_name(bad, false).unwrap_err().message, standard, "{bad}");
        }
        let fifo = "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.";
        for bad in [
            "jobs",
            ".fifo",
            "a.fifo.fifo",
            "sp ace.fifo",
            &format!("{}.fifo", "n".repeat(76)),
        ] {
            assert_eq!(validate_name(bad, true).unwrap_err().message, fifo, "{bad}");
        }
    }
}
