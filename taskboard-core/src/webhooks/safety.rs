//! Which addresses may receive deliveries: not loopback, private,
//! link-local or unspecified ones, unless the board allows them, so a
//! webhook cannot reach into the server's own network. Checked when a
//! webhook is created or changed and again for every address a target
//! resolves to when it is attempted, so a name that later resolves
//! elsewhere (DNS rebinding) is still refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::error::{Error, Result};

/// Whether an address is a globally reachable unicast address, by the
/// IANA IPv4 and IPv6 Special-Purpose Address Registries. An IPv6 address
/// that carries an IPv4 address (IPv4-mapped, IPv4-compatible,
/// IPv4-translated, NAT64, 6to4, Teredo) is public only when the IPv4
/// address it carries is.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(embedded) => embedded.iter().all(|&v4| public_v4(v4)),
            None => public_v6(v6),
        },
    }
}

/// IPv4 ranges that are not globally reachable unicast (the registry's
/// entries marked not globally reachable, and multicast and broadcast),
/// as (network, prefix length).
const V4_NOT_GLOBAL: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private use
    ([100, 64, 0, 0], 10),   // shared address space
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link local
    ([172, 16, 0, 0], 12),   // private use
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private use
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and the limited broadcast address
];

/// IPv6 ranges inside global unicast (2000::/3) that are not globally
/// reachable, as (network, prefix length). Everything outside 2000::/3
/// is refused, but for the forms that carry an IPv4 address.
const V6_NOT_GLOBAL: &[(u128, u8)] = &[
    (0x2001_0000 << 96, 23), // IETF protocol assignments (Teredo is checked by what it carries)
    (0x2001_0db8 << 96, 32), // documentation
    (0x3fff_0000 << 96, 20), // documentation
    (0x5f00_0000 << 96, 16), // segment routing SIDs (outside 2000::/3, listed for clarity)
];

/// Global unicast assignments inside 2001::/23 (the registry's entries
/// marked globally reachable there).
const V6_GLOBAL_IN_IETF: &[(u128, u8)] = &[
    (0x2001_0001_0000_0000_0000_0000_0000_0001, 128), // port control protocol anycast
    (0x2001_0001_0000_0000_0000_0000_0000_0002, 128), // TURN anycast
    (0x2001_0003 << 96, 32),                          // AMT
    (0x2001_0004_0112 << 80, 48),                     // AS112-v6
    (0x2001_0020 << 96, 28),                          // ORCHIDv2
    (0x2001_0030 << 96, 28),                          // drone remote ID
];

fn in_v4(ip: Ipv4Addr, (net, len): ([u8; 4], u8)) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    u32::from(ip) & mask == u32::from_be_bytes(net) & mask
}

fn in_v6(ip: Ipv6Addr, (net, len): (u128, u8)) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
    u128::from(ip) & mask == net & mask
}

fn public_v4(ip: Ipv4Addr) -> bool {
    !V4_NOT_GLOBAL.iter().any(|&range| in_v4(ip, range))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    if !in_v6(ip, (0x2000 << 112, 3)) {
        return false;
    }
    if V6_GLOBAL_IN_IETF.iter().any(|&range| in_v6(ip, range)) {
        return true;
    }
    !V6_NOT_GLOBAL.iter().any(|&range| in_v6(ip, range))
}

/// The IPv4 addresses an IPv6 address carries, by the forms that carry
/// one; `None` for an address of none of them.
fn embedded_v4(ip: Ipv6Addr) -> Option<Vec<Ipv4Addr>> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from(bits as u32);
    if ip.is_loopback() || ip.is_unspecified() {
        return None;
    }
    // IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96 (deprecated),
    // IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and the local
    // NAT64 prefix 64:ff9b:1::/48 (refused as a whole: local use).
    if in_v6(ip, (0xffff << 32, 96)) || in_v6(ip, (0, 96)) || in_v6(ip, (0xffff << 48, 96)) {
        return Some(vec![low32]);
    }
    if in_v6(ip, (0x0064_ff9b << 96, 96)) {
        return Some(vec![low32]);
    }
    if in_v6(ip, (0x0064_ff9b_0001 << 80, 48)) {
        return Some(vec![Ipv4Addr::UNSPECIFIED]);
    }
    // 6to4 2002::/16: the IPv4 address in bits 16-47.
    if in_v6(ip, (0x2002 << 112, 16)) {
        return Some(vec![Ipv4Addr::from((bits >> 80) as u32)]);
    }
    // Teredo 2001::/32: the server in bits 32-63, the client's address
    // inverted in the last 32 bits.
    if in_v6(ip, (0x2001_0000 << 96, 32)) {
        return Some(vec![Ipv4Addr::from((bits >> 64) as u32), Ipv4Addr::from(!(bits as u32))]);
    }
    None
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
            Err(format!("{ip} is not a globally reachable unicast address"))
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
            self.check(ip).map_err(|e| {
                Error::invalid(
                    "url",
                    format!(
                        "refused: {e}; to deliver to private addresses (this machine, a LAN), \
                         start the server with --webhook-allow-private"
                    ),
                )
            })?;
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
            // The forms that carry an IPv4 address, each carrying loopback.
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "::ffff:0:7f00:1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "64:ff9b:1::8.8.8.8",
            // Special purpose ranges.
            "fec0::1",
            "100::1",
            "192.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "2001:db8::1",
            "3fff::1",
            "2001:2::1",
            "ff02::1",
            "5f00::1",
            "4000::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "64:ff9b::8.8.8.8",
            "2002:0808:0808::1",
            "::ffff:8.8.8.8",
            "2001:4:112::1",
            "192.31.196.1",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
