//! The virtual user running the plugin: who it is, think time, the run's environment.

use std::time::Duration;

use crate::bindings::loadtest::scenario::vu as wit;

/// Who is running and which iteration this is: `vu_id` (unique in the run, from 1),
/// `vu_id_in_scenario` (from 1), `iteration` (this VU's, from 0),
/// `iteration_in_scenario` (from 0) and `scenario` (its name in the run config).
pub use wit::VuInfo;

/// The current VU and iteration.
pub fn info() -> VuInfo {
    wit::info()
}

/// The VU's id, unique in the run, from 1.
pub fn id() -> u64 {
    wit::info().vu_id
}

/// This VU's iteration number, from 0.
pub fn iteration() -> u64 {
    wit::info().iteration
}

/// Sleeps for `duration` (think time). The host awaits the timer, so no thread is
/// held; the precision is one millisecond, rounded down, and longer sleeps saturate.
pub fn sleep(duration: Duration) {
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    wit::sleep(ms);
}

/// A variable of the run's environment (`[env]` in the run config, `-e KEY=VALUE`),
/// or `None` when unset.
pub fn env(name: &str) -> Option<String> {
    wit::env(name)
}

/// Like [`env()`], with a fallback for an unset variable.
pub fn env_or(name: &str, default: &str) -> String {
    wit::env(name).unwrap_or_else(|| default.to_owned())
}

/// A variable of the environment parsed as `T` (spaces around it ignored), or
/// `default` when it is unset: `vu::env_parse("RATE", 10u64)`.
///
/// # Panics
///
/// When the variable is set but does not parse. That is a mistake in the run's
/// config, so the VU stops with a message naming the variable and its value (the host
/// reports it as the plugin's error) instead of quietly running with the default.
pub fn env_parse<T: std::str::FromStr>(name: &str, default: T) -> T
where
    T::Err: std::fmt::Display,
{
    match parse_var(name, wit::env(name), default) {
        Ok(v) => v,
        Err(message) => panic!("{message}"),
    }
}

/// The target's base URL: `BASE_URL` from the environment without its trailing
/// slashes, or `default` when unset, so paths can be appended as `{base}/path`.
pub fn base_url(default: &str) -> String {
    env_or("BASE_URL", default).trim_end_matches('/').to_owned()
}

/// [`env_parse`]'s rule, apart from the host call.
fn parse_var<T: std::str::FromStr>(
    name: &str,
    value: Option<String>,
    default: T,
) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let Some(value) = value else {
        return Ok(default);
    };
    value.trim().parse().map_err(|e| {
        format!(
            "environment variable {name} = {value:?} is not a valid {}: {e} \
             (set it with -e {name}=... or in [env], or leave it unset for the default)",
            std::any::type_name::<T>()
        )
    })
}

/// A stable address for this VU out of `cidr` (`"10.0.0.0/8"`, `"2001:db8::/32"`), to
/// send as `X-Forwarded-For` when the target sits behind a proxy it trusts: each VU
/// looks like a client of its own, and the same VU always gets the same address.
/// VU `n` gets the `n`-th host address of the range (the network address itself and,
/// for IPv4, the broadcast address are skipped), wrapping round when the range has
/// fewer addresses than there are VUs.
///
/// ```no_run
/// use loadtest::{http, vu};
/// # fn f(base: &str) -> Result<(), String> {
/// let ip = vu::fake_ip("10.0.0.0/8")?;
/// http::get(format!("{base}/")).header("X-Forwarded-For", ip.to_string()).send()?;
/// # Ok(()) }
/// ```
pub fn fake_ip(cidr: &str) -> Result<std::net::IpAddr, String> {
    fake_ip_for(cidr, id())
}

/// [`fake_ip`] for VU `vu_id`.
fn fake_ip_for(cidr: &str, vu_id: u64) -> Result<std::net::IpAddr, String> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let bad = |why: &str| {
        format!("fake_ip: {cidr:?} is not a CIDR range ({why}); write it as \"10.0.0.0/8\"")
    };
    let (addr, prefix) = cidr.split_once('/').ok_or_else(|| bad("no /prefix"))?;
    let addr: IpAddr = addr.trim().parse().map_err(|_| bad("bad address"))?;
    let prefix: u32 = prefix.trim().parse().map_err(|_| bad("bad prefix"))?;
    let bits = if addr.is_ipv4() { 32 } else { 128 };
    if prefix > bits {
        return Err(bad("prefix longer than the address"));
    }
    let host_bits = bits - prefix;
    // Usable host numbers: 1 ..= size-2 for IPv4 ranges of 4 or more addresses (no
    // network or broadcast address), 1 ..= size-1 for IPv6, the address itself for /32
    // and /128 (or /31 pairs).
    let size: u128 = if host_bits >= 128 {
        u128::MAX
    } else {
        1u128 << host_bits
    };
    let (first, count) = match (addr.is_ipv4(), size) {
        (_, 1) => (0, 1),
        (true, 2) => (0, 2),
        (true, n) => (1, n - 2),
        (false, n) => (1, n - 1),
    };
    let host = first + (vu_id.saturating_sub(1) as u128) % count;
    Ok(match addr {
        IpAddr::V4(a) => {
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << host_bits
            };
            IpAddr::V4(Ipv4Addr::from((u32::from(a) & mask) | host as u32))
        }
        IpAddr::V6(a) => {
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << host_bits
            };
            IpAddr::V6(Ipv6Addr::from((u128::from(a) & mask) | host))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_ips_are_stable_distinct_and_inside_the_range() {
        let ip = |c, n| fake_ip_for(c, n).unwrap().to_string();
        assert_eq!(ip("10.0.0.0/8", 1), "10.0.0.1");
        assert_eq!(ip("10.0.0.0/8", 300), "10.0.1.44");
        assert_eq!(ip("10.1.2.3/24", 2), "10.1.2.2");
        // A /30 has two host addresses: VUs take turns.
        assert_eq!(ip("192.0.2.0/30", 1), "192.0.2.1");
        assert_eq!(ip("192.0.2.0/30", 2), "192.0.2.2");
        assert_eq!(ip("192.0.2.0/30", 3), "192.0.2.1");
        assert_eq!(ip("192.0.2.9/32", 7), "192.0.2.9");
        assert_eq!(ip("2001:db8::/32", 5), "2001:db8::5");
        assert_eq!(ip("0.0.0.0/0", 1), "0.0.0.1");
        let distinct: std::collections::HashSet<_> =
            (1..=1000).map(|n| ip("10.0.0.0/16", n)).collect();
        assert_eq!(distinct.len(), 1000);
    }

    #[test]
    fn variables_parse_or_default_and_bad_values_say_which() {
        assert_eq!(parse_var("N", None, 7u64), Ok(7));
        assert_eq!(parse_var("N", Some(" 12 ".into()), 7u64), Ok(12));
        assert_eq!(parse_var("R", Some("0.5".into()), 1.0f64), Ok(0.5));
        let err = parse_var("N", Some("ten".into()), 7u64).unwrap_err();
        assert!(err.contains("N = \"ten\" is not a valid u64"), "{err}");
        assert!(err.contains("-e N="), "{err}");
    }

    #[test]
    fn bad_ranges_say_how_to_write_one() {
        for bad in ["10.0.0.0", "10.0.0.0/33", "ten/8", "10.0.0.0/x"] {
            let err = fake_ip_for(bad, 1).unwrap_err();
            assert!(err.contains("\"10.0.0.0/8\""), "{err}");
        }
    }
}
