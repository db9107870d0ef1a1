//! Per-client request budgets (`[rate_limit]`): one token bucket (GCRA, from `governor`) per
//! API key for requests that change something, and one per key, or per client address when
//! reads need no key, for reads. A request over its budget learns how long to wait. Knows
//! nothing of HTTP: `api::auth` asks here once it knows who the client is.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::RateLimitSettings;

/// How often buckets that have refilled completely are dropped, so that a stream of new
/// client addresses cannot grow the tables without bound.
const PRUNE_INTERVAL: Duration = Duration::from_secs(60);

/// Leading bits of an IPv6 address that name one client: a single host is usually handed a
/// whole /64, and would otherwise get one bucket per address it cares to use.
const IPV6_CLIENT_PREFIX_BITS: u32 = 64;

/// Which budget a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Routes that need a write or admin key.
    Write,
    /// Routes that read.
    Read,
}

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Client {
    /// An authenticated key, by its configured name.
    Key(String),
    /// An anonymous client, by its address (an IPv6 one by its /64).
    Address(IpAddr),
}

impl Client {
    /// The anonymous client at `ip`.
    #[must_use]
    pub fn address(ip: IpAddr) -> Self {
        // An IPv4 client of a dual-stack socket arrives as `::ffff:a.b.c.d`: by its own address,
        // not by the /64 every IPv4 client shares.
        let ip = ip.to_canonical();
        match ip {
            IpAddr::V4(_) => Self::Address(ip),
            IpAddr::V6(v6) => {
                let mask = u128::MAX << (128 - IPV6_CLIENT_PREFIX_BITS);
                Self::Address(IpAddr::from((u128::from(v6) & mask).to_be_bytes()))
            }
        }
    }
}

/// The change feeds each client keeps open, so that no one client (an anonymous address that
/// opens feeds and never reads them, say) can take every feed the service allows.
#[derive(Debug)]
pub struct FeedSlots {
    per_client: usize,
    open: Mutex<std::collections::HashMap<Client, usize>>,
}

/// One open feed of one client: given back when dropped.
#[derive(Debug)]
pub struct FeedSlot {
    slots: std::sync::Arc<FeedSlots>,
    client: Client,
}

impl FeedSlots {
    /// At most `per_client` feeds per client.
    #[must_use]
    pub fn new(per_client: usize) -> Self {
        Self {
            per_client,
            open: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// A slot for one more feed of `client`, unless they have `per_client` open.
    #[must_use]
    pub fn take(self: &std::sync::Arc<Self>, client: &Client) -> Option<FeedSlot> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(client.clone()).or_default();
        if *count >= self.per_client {
            return None;
        }
        *count += 1;
        Some(FeedSlot {
            slots: std::sync::Arc::clone(self),
            client: client.clone(),
        })
    }
}

impl Drop for FeedSlot {
    fn drop(&mut self) {
        let mut open = self
            .slots
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// Every client's budgets.
pub struct RateLimits {
    writes: Option<DefaultKeyedRateLimiter<Client>>,
    reads: Option<DefaultKeyedRateLimiter<Client>>,
    last_pruned: Mutex<Instant>,
}

/// A limiter allowing `per_second` requests per client with bursts of `burst`; `None` when
/// `per_second` is 0 (no limit).
fn limiter(per_second: u32, burst: u32) -> Option<DefaultKeyedRateLimiter<Client>> {
    let per_second = NonZeroU32::new(per_second)?;
    // Validated settings have a burst of at least 1 wherever the rate is not 0.
    let burst = NonZeroU32::new(burst).unwrap_or(per_second);
    Some(RateLimiter::dashmap(
        Quota::per_second(per_second).allow_burst(burst),
    ))
}

impl RateLimits {
    /// The budgets `settings` configure.
    #[must_use]
    pub fn new(settings: &RateLimitSettings) -> Self {
        Self {
            writes: limiter(settings.writes_per_second, settings.writes_burst),
            reads: limiter(settings.reads_per_second, settings.reads_burst),
            last_pruned: Mutex::new(Instant::now()),
        }
    }

    /// Takes one request from `client`'s `budget`, or says how long until it may ask again.
    pub fn check(&self, budget: Budget, client: &Client) -> Result<(), Duration> {
        let limiter = match budget {
            Budget::Write => &self.writes,
            Budget::Read => &self.reads,
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        self.prune_now_and_then();
        limiter
            .check_key(client)
            .map_err(|not_until| not_until.wait_time_from(limiter.clock().now()))
    }

    fn prune_now_and_then(&self) {
        // Whoever holds the lock is pruning or about to: nobody needs to wait for it.
        let Ok(mut last) = self.last_pruned.try_lock() else {
            return;
        };
        if last.elapsed() < PRUNE_INTERVAL {
            return;
        }
        *last = Instant::now();
        for limiter in [&self.writes, &self.reads].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(writes: (u32, u32), reads: (u32, u32)) -> RateLimitSettings {
        RateLimitSettings {
            writes_per_second: writes.0,
            writes_burst: writes.1,
            reads_per_second: reads.0,
            reads_burst: reads.1,
        }
    }

    #[test]
    fn an_ipv6_client_is_its_64_and_an_ipv4_one_its_address_however_it_arrives() {
        let ip = |text: &str| text.parse::<IpAddr>().expect("an address");
        assert_eq!(
            Client::address(ip("2001:db8::1")),
            Client::address(ip("2001:db8::ffff:2"))
        );
        assert_ne!(
            Client::address(ip("2001:db8::1")),
            Client::address(ip("2001:db8:0:1::1"))
        );
        assert_eq!(
            Client::address(ip("::ffff:192.0.2.1")),
            Client::address(ip("192.0.2.1"))
        );
        assert_ne!(
            Client::address(ip("::ffff:192.0.2.1")),
            Client::address(ip("::ffff:192.0.2.2"))
        );
    }

    #[test]
    fn a_client_gets_its_burst_then_waits_while_others_and_other_budgets_are_untouched() {
        let limits = RateLimits::new(&settings((1, 2), (0, 0)));
        let judge = Client::Key("judge".to_owned());
        assert_eq!(limits.check(Budget::Write, &judge), Ok(()));
        assert_eq!(limits.check(Budget::Write, &judge), Ok(()));
        let wait = limits
            .check(Budget::Write, &judge)
            .expect_err("the burst is spent");
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert_eq!(
            limits.check(Budget::Write, &Client::Key("ops".to_owned())),
            Ok(()),
            "another key has its own bucket"
        );
        for _ in 0..1000 {
            assert_eq!(
                limits.check(Budget::Read, &judge),
                Ok(()),
                "a rate of 0 is no limit"
            );
        }
    }

    #[test]
    fn addresses_in_one_ipv6_64_are_one_client_and_ipv4_addresses_are_their_own() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("an address");
        assert_eq!(
            Client::address(ip("2001:db8:1:2:aaaa::1")),
            Client::address(ip("2001:db8:1:2:bbbb::9"))
        );
        assert_ne!(
            Client::address(ip("2001:db8:1:2::1")),
            Client::address(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            Client::address(ip("192.0.2.7")),
            Client::Address(ip("192.0.2.7"))
        );
    }
}
