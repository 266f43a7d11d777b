//! Which names ssq answers to, and which web pages may call it: the guard
//! against DNS rebinding and cross-site requests.
//!
//! A web page the developer visits can make the browser send requests to
//! ssq on 127.0.0.1 in two ways, and this module refuses both before a
//! request reaches the SQS API or the admin page:
//!
//! - **DNS rebinding.** The page's own name first resolves to the attacker,
//!   then to 127.0.0.1; the browser then treats ssq as the attacker's
//!   origin and lets the page read its answers. Every such request carries
//!   the attacker's name in `Host`, so ssq answers only to names it is meant
//!   to be reached by: IP addresses (a rebinding needs a name), `localhost`
//!   and `*.localhost` (which browsers resolve to loopback themselves), the
//!   hosts of `--public-url` and `--advertise-url`, and `--allowed-hosts`.
//! - **Cross-site requests.** A page on another site can send a form POST or
//!   load an image from ssq without reading the answer, and a Query call
//!   acts all the same (`?Action=PurgeQueue` in an image's URL). Browsers say
//!   where such a request comes from: `Origin` on every POST, and
//!   `Sec-Fetch-Site: cross-site` on everything. A request whose `Origin` is
//!   not ssq itself nor an allowed name is refused, and so is any cross-site
//!   one except a plain navigation to the admin page (following a link to
//!   it), which changes nothing.
//!
//! SDKs and command-line clients send neither header, and their `Host` is
//! the endpoint they were given. `/health` and `/ready` are never refused:
//! they reveal nothing, and load balancers call them by whatever name.

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::header;

/// The names requests may name in `Host` and `Origin` beyond the ones
/// always allowed.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    /// Lower-case host names (no port); one starting with '.' allows that
    /// domain's subdomains.
    names: Vec<String>,
    /// `--allowed-hosts '*'`: every name (the check is off).
    any: bool,
}

impl AllowedHosts {
    /// `configured` is `--allowed-hosts`; `urls` the instance's own URLs
    /// (`--public-url`, `--advertise-url`), whose hosts are allowed too.
    pub fn new<'a>(configured: &[String], urls: impl IntoIterator<Item = &'a str>) -> AllowedHosts {
        let any = configured.iter().any(|name| name.trim() == "*");
        let names = configured
            .iter()
            .map(|name| normalized(name))
            .chain(
                urls.into_iter()
                    .filter_map(|url| url.split_once("://").map(|(_, rest)| rest))
                    .map(|rest| normalized(host_name(rest.split('/').next().unwrap_or_default()))),
            )
            .filter(|name| !name.is_empty() && name != "*")
            .collect();
        AllowedHosts { names, any }
    }

    /// Whether a request whose `Host` header is `authority` may be served.
    /// (Every request asks: nothing here allocates.)
    pub fn allows_host(&self, authority: &str) -> bool {
        let name = bare(host_name(authority));
        self.any || name.parse::<IpAddr>().is_ok() || self.is_named(name)
    }

    /// Whether a page at `origin` (an `Origin` header) may call ssq when
    /// the request was sent to `host`: a page of ssq itself, or of a name
    /// that is ssq's own (loopback or allowed). A page at some IP address
    /// is not, unless that is where ssq was reached.
    pub(super) fn allows_origin(&self, origin: &str, host: Option<&str>) -> bool {
        let Some((_, authority)) = origin.split_once("://") else {
            return self.any; // "null": a sandboxed frame, a file, a redirect
        };
        let name = bare(host_name(authority));
        self.any
            || host.is_some_and(|host| bare(host_name(host)).eq_ignore_ascii_case(name))
            || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || self.is_named(name)
    }

    /// `name` in any case; the allowed names are kept in lower case.
    fn is_named(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case("localhost")
            || ends_with_ignoring_case(name, ".localhost")
            || self.names.iter().any(|allowed| match allowed.strip_prefix('.') {
                Some(domain) => name.eq_ignore_ascii_case(domain) || ends_with_ignoring_case(name, allowed),
                None => name.eq_ignore_ascii_case(allowed),
            })
    }
}

/// The host of an authority (`name:port`, `[v6]:port`), without the port.
fn host_name(authority: &str) -> &str {
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(address, _)| address),
        None => authority.split(':').next().unwrap_or_default(),
    }
}

/// Without surrounding space and the trailing dot of a fully qualified name.
fn bare(name: &str) -> &str {
    name.trim().trim_end_matches('.')
}

/// A configured name as it is kept: bare, in lower case.
fn normalized(name: &str) -> String {
    bare(name).to_ascii_lowercase()
}

fn ends_with_ignoring_case(name: &str, suffix: &str) -> bool {
    let (name, suffix) = (name.as_bytes(), suffix.as_bytes());
    name.len() >= suffix.len() && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Why a request's `Host` is not one HTTP allows (RFC 9112, section 3.2:
/// a server answers 400 to an HTTP/1.1 request without one, with more than
/// one, or with one that is not `host[:port]`).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum BadHost {
    #[error("it has no Host header, which an HTTP/1.1 request must have")]
    Missing,
    #[error("it has more than one Host header")]
    Repeated,
    #[error("its Host header is not a host name or address with an optional port")]
    Malformed,
}

/// Checks the request's `Host` headers as RFC 9112 has them.
pub(super) fn check_host(request: &Request) -> Result<(), BadHost> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) => Err(BadHost::Repeated),
        (None, _) if request.version() == axum::http::Version::HTTP_11 => Err(BadHost::Missing),
        (None, _) => Ok(()),
        (Some(host), None) => match host.to_str().ok().is_some_and(is_authority) {
            true => Ok(()),
            false => Err(BadHost::Malformed),
        },
    }
}

/// Whether `text` is `uri-host [ ":" port ]` (RFC 3986): an IP literal in
/// brackets, or an IPv4 address or registered name, then digits.
fn is_authority(text: &str) -> bool {
    let (host, port) = match text.strip_prefix('[') {
        Some(literal) => match literal.split_once(']') {
            Some((address, rest)) if address.parse::<std::net::Ipv6Addr>().is_ok() => ("[]", rest),
            _ => return false,
        },
        None => match text.split_once(':') {
            Some((host, port)) => (host, text.get(host.len()..).unwrap_or(port)),
            None => (text, ""),
        },
    };
    let host_fine = host == "[]"
        || (!host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b)));
    let port_fine = match port.strip_prefix(':') {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
        None => port.is_empty(),
    };
    host_fine && port_fine
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(configured: &[&str]) -> AllowedHosts {
        let configured: Vec<String> = configured.iter().map(|s| s.to_string()).collect();
        AllowedHosts::new(
            &configured,
            ["http://sqs.internal:9324", "https://Queue.Example.com/"],
        )
    }

    #[test]
    fn ip_addresses_loopback_names_and_the_instances_own_hosts_are_answered() {
        let hosts = allowed(&[]);
        for host in [
            "127.0.0.1:9324",
            "127.0.0.1",
            "[::1]:9324",
            "10.1.2.3:9324",
            "localhost:9324",
            "LOCALHOST",
            "sqs.us-east-1.localhost:9324",
            "sqs.internal:9324",
            "queue.example.com",
            "queue.example.com.",
        ] {
            assert!(hosts.allows_host(host), "{host}");
        }
    }

    #[test]
    fn other_names_are_refused_unless_allowed() {
        let hosts = allowed(&[]);
        for host in [
            "rebind.test:9324",
            "localhost.evil.test",
            "example.com",
            "sqs.internal.evil.test",
        ] {
            assert!(!hosts.allows_host(host), "{host}");
        }
        let hosts = allowed(&["rebind.test", ".corp.test"]);
        assert!(hosts.allows_host("rebind.test:9324"));
        assert!(hosts.allows_host("a.b.corp.test"));
        assert!(hosts.allows_host("corp.test"));
        assert!(!hosts.allows_host("evilcorp.test"));
        assert!(allowed(&["*"]).allows_host("anything.test"));
    }

    #[test]
    fn a_host_header_is_one_host_and_an_optional_port() {
        for fine in [
            "127.0.0.1:9324",
            "127.0.0.1",
            "localhost",
            "[::1]:9324",
            "[::1]",
            "sqs.us-east-1.localhost:9324",
            "queue.example.com.",
        ] {
            assert!(is_authority(fine), "{fine}");
        }
        for bad in [
            "127.0.0.1:9324.evil.example",
            "127.0.0.1:80:81",
            "user@127.0.0.1",
            "",
            ":9324",
            "[::1",
            "[not-v6]:1",
            "[::1]x",
            "a b",
            "host/path",
        ] {
            assert!(!is_authority(bad), "{bad}");
        }
        let request = |hosts: &[&str], version| {
            let mut builder = axum::http::Request::builder().uri("/").version(version);
            for host in hosts {
                builder = builder.header(header::HOST, *host);
            }
            builder.body(axum::body::Body::empty()).unwrap()
        };
        use axum::http::Version;
        assert_eq!(check_host(&request(&["127.0.0.1:1"], Version::HTTP_11)), Ok(()));
        assert_eq!(
            check_host(&request(&["127.0.0.1:1", "127.0.0.1:1"], Version::HTTP_11)),
            Err(BadHost::Repeated)
        );
        assert_eq!(check_host(&request(&[], Version::HTTP_11)), Err(BadHost::Missing));
        assert_eq!(check_host(&request(&[], Version::HTTP_2)), Ok(()));
        assert_eq!(
            check_host(&request(&["127.0.0.1:1.evil.example"], Version::HTTP_11)),
            Err(BadHost::Malformed)
        );
    }

    #[test]
    fn a_page_may_call_only_from_ssq_itself_or_an_allowed_name() {
        let hosts = allowed(&[]);
        assert!(hosts.allows_origin("http://127.0.0.1:9324", Some("127.0.0.1:9324")));
        assert!(hosts.allows_origin("http://localhost:3000", Some("127.0.0.1:9324")));
        assert!(hosts.allows_origin("http://192.168.1.5:9324", Some("192.168.1.5:9324")));
        assert!(!hosts.allows_origin("http://192.168.1.5:9324", Some("127.0.0.1:9324")));
        assert!(!hosts.allows_origin("https://attacker.test", Some("127.0.0.1:9324")));
        assert!(!hosts.allows_origin("null", Some("127.0.0.1:9324")));
        assert!(allowed(&["attacker.test"]).allows_origin("https://attacker.test", Some("127.0.0.1:9324")));
    }
}
