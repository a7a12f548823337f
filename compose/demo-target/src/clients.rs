//! Who a request comes from, and how often each client may ask.
//!
//! The client's address is the TCP peer's, unless the peer is a trusted proxy
//! (`trusted_proxies`): then it is the right-most address of `X-Forwarded-For` that is
//! not itself a trusted proxy, as nginx's `real_ip_recursive` takes it. A header sent
//! by anyone else is ignored, so a client cannot pick its own address.
//!
//! With `rate_limit` set, each client address may make that many requests per second
//! (a fixed window of one second); past it the answer is 429 with `Retry-After`.
//!
//! The distinct peer addresses seen are counted (up to a bound), so a test can tell
//! whether a load generator spread its connections over several source addresses.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use hyper::HeaderMap;

/// Distinct peer addresses remembered; more are not counted.
const MAX_PEERS: usize = 65_536;

/// A range of addresses written as CIDR (`127.0.0.1/32`, `10.0.0.0/8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `ADDR/PREFIX`, or a bare address (one address).
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let bad = || format!("{text:?} is not an address range like 127.0.0.1/32 or 10.0.0.0/8");
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= bits)
                .ok_or_else(bad)?,
        };
        Ok(Cidr { addr, prefix })
    }

    /// Whether `ip` is in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Client addresses and per-address rate limits of one server.
pub struct Clients {
    trusted: Vec<Cidr>,
    limit: Option<u32>,
    started: Instant,
    /// The current one-second window and the requests of each address in it.
    window: Mutex<(u64, HashMap<IpAddr, u32>)>,
    peers: Mutex<HashSet<IpAddr>>,
    /// Requests answered 429 for the rate limit.
    limited: std::sync::atomic::AtomicU64,
}

impl Clients {
    /// Trusting `trusted` proxies, allowing `limit` requests per second per address.
    pub fn new(trusted: Vec<Cidr>, limit: Option<u32>, started: Instant) -> Self {
        Clients {
            trusted,
            limit,
            started,
            window: Mutex::new((0, HashMap::new())),
            peers: Mutex::new(HashSet::new()),
            limited: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Remembers a connection's peer address.
    pub fn connected(&self, peer: IpAddr) {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if peers.len() < MAX_PEERS {
            peers.insert(peer.to_canonical());
        }
    }

    /// Distinct peer addresses that connected so far.
    pub fn distinct_peers(&self) -> usize {
        self.peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The client behind a request from `peer` with `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.is_trusted(peer) {
            return peer;
        }
        let mut client = peer;
        // Right to left: each hop appended the address it received from.
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            match hop.trim().parse::<IpAddr>() {
                Ok(ip) => {
                    client = ip.to_canonical();
                    if !self.is_trusted(client) {
                        break;
                    }
                }
                // A malformed entry ends the chain: what is left of it cannot be trusted.
                Err(_) => break,
            }
        }
        client
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }

    /// Counts a request of `client`; `Err(seconds)` to wait when it is over the limit.
    pub fn admit(&self, client: IpAddr) -> Result<(), u64> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let second = self.started.elapsed().as_secs();
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if window.0 != second {
            // Only the current window is kept, so memory is bounded by one second's clients.
            *window = (second, HashMap::new());
        }
        let count = window.1.entry(client).or_insert(0);
        if *count >= limit {
            return Err(1);
        }
        *count += 1;
        Ok(())
    }

    /// Counts a request answered 429 for the rate limit.
    pub fn count_limited(&self) {
        self.limited
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Appends the rate limit's counter to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        out.push_str(&format!(
            "# HELP demo_rate_limited_total Requests answered 429 for the per-address rate limit.\n\
             # TYPE demo_rate_limited_total counter\n\
             demo_rate_limited_total {}\n",
            self.limited.load(std::sync::atomic::Ordering::Relaxed)
        ));
    }

    /// Whether a rate limit is set (the router skips the lookup otherwise).
    pub fn limited(&self) -> bool {
        self.limit.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_parse_and_match() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.200.1.1")));
        assert!(!c.contains(ip("11.0.0.1")));
        assert!(Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.1")));
        assert!(!Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.2")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Cidr::parse("::1/128").unwrap().contains(ip("::1")));
        assert!(Cidr::parse("127.0.0.0/8")
            .unwrap()
            .contains(ip("::ffff:127.0.0.5")));
        for bad in ["10.0.0.0/33", "x/8", "10.0.0.0/", ""] {
            assert!(
                Cidr::parse(bad).unwrap_err().contains("10.0.0.0/8"),
                "{bad}"
            );
        }
    }

    #[test]
    fn forwarded_for_counts_only_from_trusted_proxies() {
        let clients = Clients::new(
            vec![Cidr::parse("127.0.0.1/32").unwrap()],
            None,
            Instant::now(),
        );
        // From the proxy: the right-most untrusted address.
        assert_eq!(
            clients.client(ip("127.0.0.1"), &headers(&["1.2.3.4, 5.6.7.8"])),
            ip("5.6.7.8")
        );
        assert_eq!(
            clients.client(
                ip("127.0.0.1"),
                &headers(&["1.2.3.4", "5.6.7.8, 127.0.0.1"])
            ),
            ip("5.6.7.8")
        );
        // Not from the proxy: the header is the client's own claim and is ignored.
        assert_eq!(
            clients.client(ip("127.0.0.2"), &headers(&["1.2.3.4"])),
            ip("127.0.0.2")
        );
        assert_eq!(
            clients.client(ip("127.0.0.1"), &headers(&[])),
            ip("127.0.0.1")
        );
        assert_eq!(
            clients.client(ip("127.0.0.1"), &headers(&["garbage, 9.9.9.9"])),
            ip("9.9.9.9")
        );
    }

    #[test]
    fn each_address_gets_its_own_budget_per_second() {
        let clients = Clients::new(Vec::new(), Some(2), Instant::now());
        assert_eq!(clients.admit(ip("10.0.0.1")), Ok(()));
        assert_eq!(clients.admit(ip("10.0.0.1")), Ok(()));
        assert_eq!(clients.admit(ip("10.0.0.1")), Err(1));
        assert_eq!(clients.admit(ip("10.0.0.2")), Ok(()));
        let unlimited = Clients::new(Vec::new(), None, Instant::now());
        for _ in 0..100 {
            assert_eq!(unlimited.admit(ip("10.0.0.1")), Ok(()));
        }
    }

    #[test]
    fn distinct_peers_are_counted() {
        let clients = Clients::new(Vec::new(), None, Instant::now());
        clients.connected(ip("127.0.0.10"));
        clients.connected(ip("127.0.0.10"));
        clients.connected(ip("127.0.0.11"));
        assert_eq!(clients.distinct_peers(), 2);
    }
}
