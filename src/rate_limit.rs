//! Per-client request budgets (`[rate_limit]`): one token bucket (GCRA, from `governor`) per
//! API key for requests that change something, and one per key, or per client address for a
//! read given no key, for reads. A request over its budget learns how long to wait. And each
//! client's [`Shares`] of what the service bounds in all (streams, computations, past boards
//! being built), and its [`Turns`] at the reads of the database. Knows nothing of HTTP:
//! `api::auth` asks here once it knows who the client is.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
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

/// What each client holds of something the service has a bound on (open change feeds,
/// computations, past boards being built), so that no one client (an anonymous address that
/// opens feeds and never reads them, or that keeps asking for the most expensive answers) can
/// take all of it and leave the others refused.
#[derive(Debug)]
pub struct Shares {
    per_client: usize,
    held: Mutex<HashMap<Client, usize>>,
}

/// What one client holds: given back when dropped.
#[derive(Debug)]
pub struct Share {
    shares: Arc<Shares>,
    client: Client,
    amount: usize,
}

impl Shares {
    /// At most `per_client` for each client.
    #[must_use]
    pub fn new(per_client: usize) -> Self {
        Self {
            per_client,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// `amount` more for `client`, unless that would take them beyond `per_client`.
    #[must_use]
    pub fn take(self: &Arc<Self>, client: &Client, amount: usize) -> Option<Share> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(client.clone()).or_default();
        let after = count.saturating_add(amount);
        if after > self.per_client {
            if *count == 0 {
                held.remove(client);
            }
            return None;
        }
        *count = after;
        Some(Share {
            shares: Arc::clone(self),
            client: client.clone(),
            amount,
        })
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = self
            .shares
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.client) {
            *count -= self.amount;
            if *count == 0 {
                held.remove(&self.client);
            }
        }
    }
}

/// Each client's turns at something every client waits for (the reads of the database): at
/// most `per_client` of one client's requests hold a turn at once, and its others wait for one
/// of those, in order. Those of one client then wait behind each other, not ahead of everyone
/// else's, and a client sending many at once is slowed, not refused.
#[derive(Debug)]
pub struct Turns {
    per_client: usize,
    queues: Mutex<HashMap<Client, Arc<tokio::sync::Semaphore>>>,
}

/// A client's turn: given back when dropped.
#[derive(Debug)]
pub struct Turn {
    turns: Arc<Turns>,
    client: Client,
    queue: Arc<tokio::sync::Semaphore>,
    /// Whether the turn was had (not when its wait was given up).
    held: bool,
}

impl Turns {
    /// At most `per_client` turns held by each client at once.
    #[must_use]
    pub fn new(per_client: usize) -> Self {
        Self {
            per_client,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// A turn for `client`, once one of its turns is free.
    pub async fn take(self: &Arc<Self>, client: &Client) -> Turn {
        let queue = {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            let queue = queues
                .entry(client.clone())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(self.per_client)));
            Arc::clone(queue)
        };
        // Made before the wait, so that a wait given up (its request gone) cleans up too.
        let mut turn = Turn {
            turns: Arc::clone(self),
            client: client.clone(),
            queue,
            held: false,
        };
        turn.queue
            .acquire()
            .await
            .expect("a client's queue is never closed")
            .forget();
        turn.held = true;
        turn
    }

    /// Clients with a turn held or awaited.
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.held {
            self.queue.add_permits(1);
        }
        let mut queues = self
            .turns
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Only the table and this turn hold the queue: nobody holds or awaits a turn of this
        // client, whom the table can forget. Whoever looks it up next sees the table under
        // the same lock, so the count cannot grow meanwhile.
        if Arc::strong_count(&self.queue) == 2 {
            queues.remove(&self.client);
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

    #[test]
    fn a_client_holds_at_most_its_share_and_gets_back_what_it_drops() {
        let shares = Arc::new(Shares::new(10));
        let one = Client::Key("one".to_owned());
        let two = Client::Key("two".to_owned());
        let six = shares.take(&one, 6).expect("6 of 10");
        assert!(shares.take(&one, 5).is_none(), "11 of 10");
        let four = shares.take(&one, 4).expect("10 of 10");
        assert!(shares.take(&one, 1).is_none(), "the share is used up");
        assert!(
            shares.take(&two, 10).is_some(),
            "another client's share is its own"
        );
        assert!(shares.take(&two, 11).is_none(), "more than a share at once");
        drop(six);
        let again = shares.take(&one, 6).expect("what was dropped is back");
        drop((again, four));
        let held = shares.held.lock().expect("not poisoned");
        assert!(held.is_empty(), "clients holding nothing are forgotten");
    }

    #[tokio::test]
    async fn a_client_beyond_its_turns_waits_for_one_of_them_and_others_do_not() {
        let turns = Arc::new(Turns::new(2));
        let one = Client::Key("one".into());
        let other = Client::Key("other".into());
        let first = turns.take(&one).await;
        let second = turns.take(&one).await;
        let mut third = Box::pin(turns.take(&one));
        let waited = tokio::time::timeout(Duration::from_millis(50), &mut third).await;
        assert!(waited.is_err(), "a third turn waits while two are held");
        let others = turns.take(&other).await;
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .expect("a turn given back goes to the one waiting");
        assert_eq!(turns.clients(), 2);
        drop((second, third, others));
        assert_eq!(turns.clients(), 0, "clients holding no turn are forgotten");
    }

    #[tokio::test]
    async fn a_wait_given_up_leaves_no_client_behind() {
        let turns = Arc::new(Turns::new(1));
        let one = Client::Key("one".into());
        let held = turns.take(&one).await;
        let waited = tokio::time::timeout(Duration::from_millis(20), turns.take(&one)).await;
        assert!(waited.is_err(), "the second turn waits");
        drop(held);
        assert_eq!(turns.clients(), 0);
        let _again = turns.take(&one).await;
    }
}
