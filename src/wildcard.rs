//! Wildcard matching, shared by SNS filter policies (`*` alone) and IAM
//! policies (`*` and `?`): one pass with a single backtrack point (the last
//! `*`), the classic glob walk, so that no pattern takes exponential time
//! or recursion.

/// Whether `text` matches `pattern`, where `star` matches any run (none
/// included), `any_one` (if given) any one element, and other elements
/// match those that are `same`.
pub fn matches<T: Copy + PartialEq>(
    pattern: &[T],
    text: &[T],
    star: T,
    any_one: Option<T>,
    same: impl Fn(T, T) -> bool,
) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last star seen, and where in the text its match ends for now.
    let mut last_star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == star {
            last_star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && (Some(pattern[p]) == any_one || same(pattern[p], text[t])) {
            p += 1;
            t += 1;
        } else if let Some((star_at, matched_to)) = last_star {
            // Let the last star take one more element and try again.
            p = star_at + 1;
            t = matched_to + 1;
            last_star = Some((star_at, matched_to + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == star)
}
