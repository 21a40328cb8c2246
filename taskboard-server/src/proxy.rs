//! The client's address behind a reverse proxy or load balancer.
//!
//! Login throttling counts failures per client address, so behind a
//! balancer every request would otherwise come from the balancer and 100
//! failures from anyone would lock everyone out. `Forwarded` (RFC 7239)
//! and `X-Forwarded-For` are honoured only on connections from a
//! `--trusted-proxy` network, since any client can send them: the client
//! is the rightmost address in the chain that is not itself a trusted
//! proxy.

use std::net::IpAddr;

use hyper::HeaderMap;
use ipnet::IpNet;

/// The networks whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    pub fn new(networks: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies(networks)
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(&ip))
    }

    /// The client of a request that came from `peer`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let mut chain = forwarded_for(headers);
        // Rightmost first: each hop appends the address it saw.
        while let Some(ip) = chain.pop() {
            if !self.trusts(ip) {
                return ip;
            }
        }
        peer
    }
}

/// The addresses of `Forwarded: for=…` when present, else of
/// `X-Forwarded-For`, in order; an entry that is not an address (an
/// obfuscated identifier, `unknown`) ends the chain there, since nothing
/// to its left can be attributed.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let forwarded: Vec<String> = headers
        .get_all(hyper::header::FORWARDED)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (name, value) = pair.trim().split_once('=')?;
                name.trim().eq_ignore_ascii_case("for").then(|| value.trim().trim_matches('"').to_string())
            })
        })
        .collect();
    let entries: Vec<String> = if !forwarded.is_empty() {
        forwarded
    } else {
        headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_string())
            .collect()
    };
    let mut out = Vec::new();
    for entry in entries.iter().rev() {
        match parse_node(entry) {
            Some(ip) => out.push(ip),
            None => break,
        }
    }
    out.reverse();
    out
}

/// An address as `Forwarded` or `X-Forwarded-For` write it: `1.2.3.4`,
/// `1.2.3.4:5678`, `[2001:db8::1]` or `[2001:db8::1]:5678`, `2001:db8::1`.
fn parse_node(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse() {
        return Some(ip);
    }
    if let Some(rest) = entry.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    entry.rsplit_once(':').and_then(|(host, _)| host.parse::<std::net::Ipv4Addr>().ok()).map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn forwarding_headers_count_only_from_trusted_proxies() {
        let trusted = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let client: IpAddr = "203.0.113.7".parse().unwrap();
        let proxy: IpAddr = "10.1.2.3".parse().unwrap();
        let xff = headers(&[("x-forwarded-for", "198.51.100.1, 203.0.113.7")]);
        // From the proxy: the rightmost untrusted address.
        assert_eq!(trusted.client(proxy, &xff), client);
        // From anyone else: the peer, whatever it claims.
        assert_eq!(trusted.client(client, &headers(&[("x-forwarded-for", "1.2.3.4")])), client);
        // Trusted hops in the chain are skipped.
        let chain = headers(&[("x-forwarded-for", "203.0.113.7, 10.9.9.9")]);
        assert_eq!(trusted.client(proxy, &chain), client);
        // Forwarded wins over X-Forwarded-For, with ports and brackets.
        let fwd = headers(&[
            ("forwarded", "for=\"[2001:db8::5]:443\";proto=https, for=203.0.113.7:1234"),
            ("x-forwarded-for", "1.1.1.1"),
        ]);
        assert_eq!(trusted.client(proxy, &fwd), client);
        // Nothing usable: the proxy itself.
        assert_eq!(trusted.client(proxy, &headers(&[("forwarded", "for=unknown")])), proxy);
        // Without trusted networks nothing is believed.
        assert_eq!(TrustedProxies::default().client(proxy, &xff), proxy);
    }
}
