//! Where webhooks may go (`--sns-endpoints`): a subscription makes ssq send
//! requests where a client says, so only host names and networks an
//! operator allowed are reached; by default loopback alone. A name is
//! resolved once per delivery and the connection made to the address that
//! was checked, so a name that resolves elsewhere later (DNS rebinding)
//! reaches nothing new.

use std::net::{IpAddr, SocketAddr};

/// The allowed destinations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destinations {
    /// Host names allowed whatever they resolve to (lowercase).
    hosts: Vec<String>,
    /// Networks allowed, as address and prefix length.
    networks: Vec<(IpAddr, u8)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DestinationsError {
    #[error("--sns-endpoints: {0:?} is neither a host name nor a network (address/bits)")]
    Unreadable(String),
}

/// Why a webhook was not sent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("{0} is not a URL ssq can send to")]
    BadUrl(String),
    #[error("{host} resolves to no address allowed by --sns-endpoints (loopback only by default)")]
    NotAllowed { host: String },
    #[error("{host} could not be resolved")]
    Unresolved { host: String },
}

impl Default for Destinations {
    fn default() -> Destinations {
        Destinations::parse("localhost,127.0.0.0/8,::1/128").unwrap_or(Destinations {
            hosts: Vec::new(),
            networks: Vec::new(),
        })
    }
}

impl Destinations {
    /// Reads a comma-separated list of host names and networks.
    pub fn parse(text: &str) -> Result<Destinations, DestinationsError> {
        let mut destinations = Destinations {
            hosts: Vec::new(),
            networks: Vec::new(),
        };
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            if let Some((address, bits)) = item.split_once('/') {
                let address: IpAddr = address
                    .parse()
                    .map_err(|_| DestinationsError::Unreadable(item.into()))?;
                let max = if address.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits
                    .parse()
                    .ok()
                    .filter(|bits| *bits <= max)
                    .ok_or_else(|| DestinationsError::Unreadable(item.into()))?;
                destinations.networks.push((address, bits));
            } else if let Ok(address) = item.parse::<IpAddr>() {
                let bits = if address.is_ipv4() { 32 } else { 128 };
                destinations.networks.push((address, bits));
            } else if item
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'*')
            {
                destinations.hosts.push(item.to_ascii_lowercase());
            } else {
                return Err(DestinationsError::Unreadable(item.into()));
            }
        }
        Ok(destinations)
    }

    fn allows_host(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.iter().any(|allowed| match allowed.strip_prefix("*.") {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => *allowed == host,
        })
    }

    fn allows_address(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(address),
            v4 => v4,
        };
        self.networks
            .iter()
            .any(|(network, bits)| crate::topic::filter::in_network(address, *network, *bits))
    }

    /// The address to connect to for `host:port`, resolved and checked.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<SocketAddr, Refused> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(address) = bare.parse::<IpAddr>() {
            return match self.allows_address(address) {
                true => Ok(SocketAddr::new(address, port)),
                false => Err(Refused::NotAllowed { host: host.into() }),
            };
        }
        let by_name = self.allows_host(bare);
        let addresses = tokio::net::lookup_host((bare, port))
            .await
            .map_err(|_| Refused::Unresolved { host: host.into() })?;
        let mut resolved = false;
        for address in addresses {
            resolved = true;
            if by_name || self.allows_address(address.ip()) {
                return Ok(address);
            }
        }
        match resolved {
            true => Err(Refused::NotAllowed { host: host.into() }),
            false => Err(Refused::Unresolved { host: host.into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_alone_by_default_and_what_the_operator_adds() {
        let default = Destinations::default();
        assert!(default.resolve("127.0.0.1", 80).await.is_ok());
        assert!(default.resolve("[::1]", 80).await.is_ok());
        assert!(default.resolve("localhost", 80).await.is_ok());
        assert_eq!(
            default.resolve("10.1.2.3", 80).await,
            Err(Refused::NotAllowed {
                host: "10.1.2.3".into()
            })
        );
        assert!(default.resolve("169.254.169.254", 80).await.is_err());
        let wider = Destinations::parse("10.0.0.0/8, hooks.example, *.internal").unwrap();
        assert!(wider.resolve("10.1.2.3", 80).await.is_ok());
        assert!(wider.allows_host("HOOKS.example") && wider.allows_host("a.b.internal"));
        assert!(!wider.allows_host("internal") && !wider.allows_host("example"));
        assert!(wider.resolve("127.0.0.1", 80).await.is_err());
        assert!(Destinations::parse("10.0.0.0/33").is_err());
        assert!(Destinations::parse("a b").is_err());
    }
}
