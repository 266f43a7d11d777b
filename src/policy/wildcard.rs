//! IAM's wildcards: `*` matches any run of characters (none included), `?`
//! any one character; everything else matches itself. Actions compare
//! without regard to case, ARNs and condition strings with it. The walk is
//! `crate::wildcard`'s.

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &str, text: &str, ignore_case: bool) -> bool {
    // Actions and ARNs are ASCII: matched as bytes, without allocating.
    if pattern.is_ascii() && text.is_ascii() {
        let same = |a: u8, b: u8| match ignore_case {
            true => a.eq_ignore_ascii_case(&b),
            false => a == b,
        };
        return crate::wildcard::matches(pattern.as_bytes(), text.as_bytes(), b'*', Some(b'?'), same);
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let same = |a: char, b: char| match ignore_case {
        true => a.to_lowercase().eq(b.to_lowercase()),
        false => a == b,
    };
    crate::wildcard::matches(&pattern, &text, '*', Some('?'), same)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("sqs:*", "sqs:SendMessage", true));
        assert!(
            matches("sqs:send*", "sqs:SendMessage", true),
            "actions ignore case"
        );
        assert!(!matches("sqs:send*", "sqs:SendMessage", false));
        assert!(matches("sqs:*Message*", "sqs:ReceiveMessage", true));
        assert!(!matches("sqs:*Message", "sqs:SendMessageBatch", true));
        assert!(matches(
            "arn:aws:sqs:*:123456789012:orders-?",
            "arn:aws:sqs:us-east-1:123456789012:orders-1",
            false
        ));
        assert!(!matches(
            "arn:aws:sqs:*:123456789012:orders-?",
            "arn:aws:sqs:us-east-1:123456789012:orders-10",
            false
        ));
        assert!(matches("*", "", false));
        assert!(matches("", "", false));
        assert!(!matches("", "x", false));
        assert!(!matches("?", "", false));
        // Many stars against a long near miss: still quick.
        let text = "a".repeat(5_000);
        assert!(!matches(&format!("{}b", "*a".repeat(50)), &text, false));
    }
}
