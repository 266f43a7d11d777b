//! Durability: every change a client is told about is written to the store
//! first, in Redis (`redis/`) or Postgres (`postgres/`), both fenced by the
//! leader's epoch, or on local disk (`disk/`, one instance). All take the
//! service's writes through the same seam (`journal.rs`), gather them into
//! group commits the same way (`group_commit.rs`) and keep the same records
//! (`codec.rs`); the group-backed ones fence loads alike (`load_id.rs`,
//! `reload.rs`) and reach their servers over the same TLS (`tls.rs`); a
//! snapshot (`snapshot/`) moves the state between them. A backend shared
//! by a group is all in its folder, its lock, roster, notices and mailboxes
//! too, started for the group through `cluster::Backend`. `etcd/` keeps
//! no data: it is a lock (`--lock-url`) beside one of the shared stores,
//! fenced through that store.

pub(crate) mod batch;
pub(crate) mod codec;
pub mod disk;
pub mod etcd;
pub(crate) mod folded_commit;
pub(crate) mod group_commit;
pub(crate) mod load_id;
pub mod mysql;
pub mod postgres;
pub mod redis;
pub(crate) mod reload;
pub mod snapshot;
pub mod tls;

/// A store's URL fit to be logged or shown: the password of its user
/// part (`scheme://user:password@host`) and of any query parameter named
/// for one (`sentinelPassword=`) replaced by `…`, the rest as given, so
/// that an operator still recognises the URL at fault.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    // The user part ends at the last `@`: a password may hold `@` and `/`
    // where a client took it unescaped.
    let authority_end = rest.rfind('@').map(|at| at + 1).unwrap_or(0);
    let (userinfo, hosts) = rest.split_at(authority_end);
    let mut shown = match userinfo.strip_suffix('@').and_then(|info| info.split_once(':')) {
        Some((user, _)) => format!("{scheme}://{user}:…@{hosts}"),
        None => format!("{scheme}://{rest}"),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.to_ascii_lowercase().contains("password") => format!("{key}=…"),
                _ => pair.to_string(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&pairs.join("&"));
    }
    shown
}

/// The epoch of the lease this instance holds for its current term, and
/// the term: what fences its writes.
pub(crate) fn current_epoch(leadership: &crate::leader::Leadership) -> Option<(u64, i64)> {
    let (term, token) = leadership.current_term()?;
    let epoch = crate::leader::LeaderInfo::parse(&token)?.epoch;
    Some((term, epoch as i64))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_url_shown_holds_no_password() {
        let cases = [
            (
                "redis://:SECRET@127.0.0.1:notaport",
                "redis://:…@127.0.0.1:notaport",
            ),
            (
                "rediss://user:SECRET@127.0.0.1:99999",
                "rediss://user:…@127.0.0.1:99999",
            ),
            ("redis://u:p@ss/w@rd@h:1/0", "redis://u:…@h:1/0"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("redis://user@127.0.0.1", "redis://user@127.0.0.1"),
            ("unix:///run/redis.sock", "unix:///run/redis.sock"),
            (
                "redis-sentinel://h:1?sentinelServiceName=s&sentinelPassword=SECRET",
                "redis-sentinel://h:1?sentinelServiceName=s&sentinelPassword=…",
            ),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(super::without_password(url), shown);
            assert!(!super::without_password(url).contains("SECRET"));
        }
    }
}
