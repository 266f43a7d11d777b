//! Random identifiers: message ids, receipt nonces, request and task ids.
//!
//! They come from the thread's cryptographically secure generator (rand's
//! `ThreadRng`, seeded from the OS), not from the OS for each one: uuid's
//! `new_v4` makes a `getrandom` system call per id, which cost about 2% of
//! the CPU of every SendMessage. Receipt nonces must stay unguessable, so a
//! fast but predictable generator would not do.

/// A version-4 (random) UUID.
pub fn uuid() -> uuid::Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
}

/// 64 random bits.
pub fn nonce() -> u64 {
    rand::random()
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_are_version_4_and_differ() {
        let (a, b) = (super::uuid(), super::uuid());
        assert_eq!(a.get_version_num(), 4);
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(a, b);
        assert_ne!(super::nonce(), super::nonce());
    }
}
