//! Which addresses may receive deliveries: not loopback, private,
//! link-local or unspecified ones, unless the board allows them, so a
//! webhook cannot reach into the server's own network. Checked when a
//! webhook is created or changed and again for every address a target
//! resolves to when it is attempted, so a name that later resolves
//! elsewhere (DNS rebinding) is still refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::error::{Error, Result};

/// Whether an address is on the public internet, as far as webhooks go.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(v6),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        // shared address space (carrier-grade NAT), 100.64.0.0/10
        || (a == 100 && (64..128).contains(&b))
        // benchmarking, 198.18.0.0/15
        || (a == 198 && (b == 18 || b == 19)))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // unique local fc00::/7
        || (first & 0xfe00) == 0xfc00
        // link-local fe80::/10
        || (first & 0xffc0) == 0xfe80)
}

/// Whether targets must be public addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressRule {
    pub allow_private: bool,
}

impl AddressRule {
    /// Refuses an address a delivery may not go to.
    pub fn check(&self, ip: IpAddr) -> std::result::Result<(), String> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(format!("{ip} is a loopback, private, link-local or unspecified address"))
        }
    }

    /// Checks a webhook URL: http or https, with a host that is, or
    /// resolves only to, addresses deliveries may go to.
    pub async fn check_url(&self, raw: &str) -> Result<Url> {
        let url = Url::parse(raw).map_err(|e| Error::invalid("url", format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::invalid("url", format!("must be http or https, not {}", url.scheme())));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Error::invalid("url", "must not carry credentials"));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let ips: Vec<IpAddr> = match url.host() {
            None => return Err(Error::invalid("url", "has no host")),
            Some(Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
            Some(Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
            Some(Host::Domain(name)) => {
                if self.allow_private {
                    return Ok(url);
                }
                let found = tokio::net::lookup_host((name, port))
                    .await
                    .map_err(|e| Error::invalid("url", format!("{name} does not resolve: {e}")))?;
                found.map(|a| a.ip()).collect()
            }
        };
        for ip in ips {
            self.check(ip).map_err(|e| Error::invalid("url", format!("refused: {e}")))?;
        }
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
