//! Queue keys: how one instance names the queues of every account and
//! region.
//!
//! A queue belongs to an account and a region, as in AWS: the same name in
//! two regions, or two accounts, is two queues. The instance's own account
//! and region ([`Home`]: `--account-id`, `--region`) keep the shortest keys,
//! as every queue had before queues had regions and accounts, so stored data
//! and queue URLs stay as they were:
//!
//! | queue of | key |
//! |---|---|
//! | the home account, the home region | `<name>` |
//! | the home account, another region | `<region>/<name>` |
//! | another account (`--credentials`) | `<account>/<region>/<name>` |
//!
//! A queue name never holds a `/`, and an account (12 digits) never reads
//! as a region (which starts with a letter), so the forms never meet. The
//! key is what the service, the store (Redis key names), metrics and the
//! admin page use; the API turns it into URLs and ARNs.

/// The instance's own account and region: whose queues have the short keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub account: String,
    pub region: String,
}

/// What a key says: the queue's account and region (`None`: the home one)
/// and its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts<'a> {
    pub account: Option<&'a str>,
    pub region: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> Parts<'a> {
    /// The queue's account, the home one filled in.
    pub fn account_or(&self, home: &'a Home) -> &'a str {
        self.account.unwrap_or(&home.account)
    }

    /// The queue's region, the home one filled in.
    pub fn region_or(&self, home: &'a Home) -> &'a str {
        self.region.unwrap_or(&home.region)
    }
}

/// The key of queue `name` of `account` in `region`.
pub fn of(home: &Home, account: &str, region: &str, name: &str) -> String {
    match (account == home.account, region == home.region) {
        (true, true) => name.to_string(),
        (true, false) => format!("{region}/{name}"),
        (false, _) => format!("{account}/{region}/{name}"),
    }
}

/// The ARN of the queue keyed `key`.
pub fn arn(key: &str, home: &Home) -> String {
    let parts = split(key);
    super::QueueArn::text(parts.region_or(home), parts.account_or(home), parts.name)
}

/// How the keys of `account`'s queues in `region` start, for listing them:
/// a listed key's remainder holds no `/`.
pub fn prefix(home: &Home, account: &str, region: &str) -> String {
    of(home, account, region, "")
}

/// What a key says.
pub fn split(key: &str) -> Parts<'_> {
    let mut parts = key.rsplitn(3, '/');
    let name = parts.next().unwrap_or_default();
    let region = parts.next();
    Parts {
        account: parts.next(),
        region,
        name,
    }
}

/// The key of queue `name` in the same account and region as the queue
/// keyed `key`: a dead-letter queue and its sources share both.
pub fn sibling(key: &str, name: &str) -> String {
    match key.rsplit_once('/') {
        Some((place, _)) => format!("{place}/{name}"),
        None => name.to_string(),
    }
}

/// Whether `text` can be an account id: 12 digits.
pub fn is_account(text: &str) -> bool {
    text.len() == 12 && text.bytes().all(|b| b.is_ascii_digit())
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

    fn home() -> Home {
        Home {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        }
    }

    #[test]
    fn home_queues_keep_their_bare_names_and_others_say_where_they_are() {
        let home = home();
        assert_eq!(of(&home, "000000000000", "us-east-1", "jobs"), "jobs");
        assert_eq!(of(&home, "000000000000", "eu-north-1", "jobs"), "eu-north-1/jobs");
        assert_eq!(
            of(&home, "111122223333", "us-east-1", "jobs"),
            "111122223333/us-east-1/jobs"
        );
        let parts = |account, region, name| Parts {
            account,
            region,
            name,
        };
        assert_eq!(split("jobs"), parts(None, None, "jobs"));
        assert_eq!(split("eu-north-1/jobs"), parts(None, Some("eu-north-1"), "jobs"));
        assert_eq!(
            split("111122223333/us-east-1/jobs"),
            parts(Some("111122223333"), Some("us-east-1"), "jobs")
        );
        let other = split("111122223333/eu-north-1/jobs");
        assert_eq!(
            (other.account_or(&home), other.region_or(&home)),
            ("111122223333", "eu-north-1")
        );
        let mine = split("jobs");
        assert_eq!(
            (mine.account_or(&home), mine.region_or(&home)),
            ("000000000000", "us-east-1")
        );
        assert_eq!(sibling("eu-north-1/jobs", "dead"), "eu-north-1/dead");
        assert_eq!(
            sibling("111122223333/us-east-1/jobs", "dead"),
            "111122223333/us-east-1/dead"
        );
        assert_eq!(sibling("jobs", "dead"), "dead");
        assert_eq!(
            prefix(&home, "111122223333", "us-east-1"),
            "111122223333/us-east-1/"
        );
        assert_eq!(prefix(&home, "000000000000", "us-east-1"), "");
        assert!(is_account("111122223333") && !is_account("11112222333") && !is_account("us-east-1"));
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
