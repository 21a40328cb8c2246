//! Throttling of failed logins: per login and per client address, in
//! fixed windows that start at the first failure.
//!
//! A login that fails `per_login` times within `window` of its first
//! failure, or an address from which `per_address` logins failed, is
//! refused (429 with the time left) until that window has passed, before
//! any password is checked. Attempts still being checked count against
//! the limit too, so a burst of parallel attempts cannot slip past it. A
//! success clears its login's failures (not its address's).
//!
//! Memory is bounded: finished windows are pruned whenever a table
//! reaches `max_entries`, and if it is still full the older half of the
//! entries is dropped (the limits then start afresh for those, which
//! takes as many failures again as the table holds).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::error::{Error, Result};

/// The limits of login throttling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Failures of one login allowed within a window.
    pub per_login: u32,
    /// Failures from one client address allowed within a window.
    pub per_address: u32,
    /// Length of a window, from its first failure.
    pub window: Duration,
    /// Most logins, and most addresses, tracked at once.
    pub max_entries: usize,
}

impl Default for LoginLimits {
    fn default() -> LoginLimits {
        LoginLimits {
            per_login: 10,
            per_address: 100,
            window: Duration::from_secs(15 * 60),
            max_entries: 50_000,
        }
    }
}

/// The time source of rules that count time: the system's monotonic
/// clock, or a manual one that tests move forward.
#[derive(Clone, Default)]
pub struct Clock {
    manual: Option<Arc<Mutex<Instant>>>,
    /// When a manual clock was made, in both forms, so its wall-clock
    /// time moves with it.
    origin: Option<(Instant, jiff::Timestamp)>,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.manual.is_some() { "Clock(manual)" } else { "Clock(system)" })
    }
}

impl Clock {
    /// The system's monotonic clock.
    pub fn system() -> Clock {
        Clock { manual: None, origin: None }
    }

    /// A clock that stands still until [`Clock::advance`] moves it.
    pub fn manual() -> Clock {
        let now = Instant::now();
        Clock { manual: Some(Arc::new(Mutex::new(now))), origin: Some((now, jiff::Timestamp::now())) }
    }

    /// The wall-clock time: the system's, or a manual clock's origin moved
    /// as far as the clock was advanced. Leases and stored answers expire
    /// by it.
    pub fn timestamp(&self) -> jiff::Timestamp {
        match (&self.manual, self.origin) {
            (Some(at), Some((start, wall))) => {
                let elapsed = at.lock().unwrap().duration_since(start);
                let span = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
                wall.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
            }
            _ => jiff::Timestamp::now(),
        }
    }

    pub fn now(&self) -> Instant {
        match &self.manual {
            Some(at) => *at.lock().unwrap(),
            None => Instant::now(),
        }
    }

    /// Moves a manual clock forward; the system clock ignores it.
    pub fn advance(&self, by: Duration) {
        if let Some(at) = &self.manual {
            *at.lock().unwrap() += by;
        }
    }
}

/// What a login attempt is counted under: the member it names, when it
/// names one, so its slug and its name share one count; otherwise a hash
/// of the text as given (lower-cased), so an unknown name takes no more
/// memory than a known one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LoginKey {
    Member(Uuid),
    Text(u64),
}

/// The client address an attempt is counted under: IPv4 addresses whole,
/// IPv6 ones by their /64 prefix, which one host commonly holds whole.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
        v4 => v4,
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
    checking: u32,
}

impl Window {
    fn idle(&self, now: Instant, length: Duration) -> bool {
        self.checking == 0 && (self.failures == 0 || now.duration_since(self.start) >= length)
    }
}

/// One table of windows.
struct Counts<K> {
    limit: u32,
    windows: HashMap<K, Window>,
}

impl<K: Eq + Hash + Copy> Counts<K> {
    fn new(limit: u32) -> Counts<K> {
        Counts { limit, windows: HashMap::new() }
    }

    /// The time left before `key` may try again, if it may not now.
    fn refused(&mut self, key: K, now: Instant, length: Duration) -> Option<Duration> {
        let w = self.windows.get_mut(&key)?;
        if w.failures > 0 && now.duration_since(w.start) >= length {
            w.failures = 0;
        }
        if w.failures + w.checking < self.limit {
            return None;
        }
        let left = (w.start + length).saturating_duration_since(now);
        // Full only with attempts still being checked: their outcome is
        // a moment away.
        Some(if w.failures >= self.limit { left } else { Duration::from_secs(1) })
    }

    fn begin(&mut self, key: K, now: Instant, limits: &LoginLimits) {
        if !self.windows.contains_key(&key) && self.windows.len() >= limits.max_entries {
            self.shrink(now, limits);
        }
        let w = self.windows.entry(key).or_insert(Window { start: now, failures: 0, checking: 0 });
        w.checking += 1;
    }

    fn end(&mut self, key: K, now: Instant, length: Duration, failed: bool, reset: bool) {
        let Some(w) = self.windows.get_mut(&key) else { return };
        w.checking = w.checking.saturating_sub(1);
        if reset || now.duration_since(w.start) >= length {
            w.failures = 0;
        }
        if failed {
            if w.failures == 0 {
                w.start = now;
            }
            w.failures += 1;
        }
        if w.checking == 0 && w.failures == 0 {
            self.windows.remove(&key);
        }
    }

    fn shrink(&mut self, now: Instant, limits: &LoginLimits) {
        self.windows.retain(|_, w| !w.idle(now, limits.window));
        if self.windows.len() >= limits.max_entries {
            let mut starts: Vec<Instant> =
                self.windows.values().filter(|w| w.checking == 0).map(|w| w.start).collect();
            if starts.is_empty() {
                return;
            }
            let middle = starts.len() / 2;
            let (_, cut, _) = starts.select_nth_unstable(middle);
            let cut = *cut;
            self.windows.retain(|_, w| w.checking > 0 || w.start > cut);
        }
    }
}

/// The throttle of one board.
pub(crate) struct LoginThrottle {
    limits: LoginLimits,
    clock: Clock,
    hasher: std::collections::hash_map::RandomState,
    tables: Mutex<(Counts<LoginKey>, Counts<IpAddr>)>,
}

/// An attempt let through: it holds its places in the counts until its
/// outcome is recorded, or gives them back if dropped undecided.
pub(crate) struct Attempt<'a> {
    throttle: &'a LoginThrottle,
    login: LoginKey,
    address: Option<IpAddr>,
    done: bool,
}

impl LoginThrottle {
    pub fn new(limits: LoginLimits, clock: Clock) -> LoginThrottle {
        LoginThrottle {
            tables: Mutex::new((Counts::new(limits.per_login), Counts::new(limits.per_address))),
            limits,
            clock,
            hasher: Default::default(),
        }
    }

    /// The key of a login that names no member.
    pub fn text_key(&self, login: &str) -> LoginKey {
        LoginKey::Text(self.hasher.hash_one(login.trim().to_lowercase()))
    }

    /// Refuses an address that is over its limit; cheap, and done before
    /// anything else.
    pub fn check_address(&self, address: Option<IpAddr>) -> Result<()> {
        let Some(address) = address.map(address_key) else { return Ok(()) };
        let now = self.clock.now();
        let mut tables = self.tables.lock().unwrap();
        match tables.1.refused(address, now, self.limits.window) {
            Some(left) => Err(refusal("from this address", left)),
            None => Ok(()),
        }
    }

    /// Lets an attempt through, or refuses it when its login or address
    /// is over the limit.
    pub fn begin(&self, login: LoginKey, address: Option<IpAddr>) -> Result<Attempt<'_>> {
        let address = address.map(address_key);
        let now = self.clock.now();
        let mut tables = self.tables.lock().unwrap();
        let (logins, addresses) = &mut *tables;
        if let Some(left) = address.and_then(|a| addresses.refused(a, now, self.limits.window)) {
            return Err(refusal("from this address", left));
        }
        if let Some(left) = logins.refused(login, now, self.limits.window) {
            return Err(refusal("for this login", left));
        }
        logins.begin(login, now, &self.limits);
        if let Some(a) = address {
            addresses.begin(a, now, &self.limits);
        }
        Ok(Attempt { throttle: self, login, address, done: false })
    }

    fn end(&self, attempt: &Attempt<'_>, outcome: Option<bool>) {
        let now = self.clock.now();
        let mut tables = self.tables.lock().unwrap();
        let (logins, addresses) = &mut *tables;
        let failed = outcome == Some(false);
        let length = self.limits.window;
        logins.end(attempt.login, now, length, failed, outcome == Some(true));
        if let Some(a) = attempt.address {
            addresses.end(a, now, length, failed, false);
        }
    }

    #[cfg(test)]
    fn tracked(&self) -> (usize, usize) {
        let tables = self.tables.lock().unwrap();
        (tables.0.windows.len(), tables.1.windows.len())
    }
}

fn refusal(what: &str, left: Duration) -> Error {
    Error::too_many_requests(format!("too many failed logins {what}; try again later"), left)
}

impl Attempt<'_> {
    /// Records the outcome: a failure counts, a success clears the
    /// login's failures.
    pub fn finish(mut self, success: bool) {
        self.done = true;
        self.throttle.end(&self, Some(success));
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.throttle.end(self, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> LoginLimits {
        LoginLimits { per_login: 3, per_address: 5, window: Duration::from_secs(60), max_entries: 8 }
    }

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));

    #[test]
    fn ipv6_addresses_count_by_their_64_prefix() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(address_key(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn attempts_being_checked_count_and_dropped_ones_give_their_place_back() {
        let t = LoginThrottle::new(limits(), Clock::manual());
        let key = t.text_key("ana");
        let held: Vec<_> = (0..3).map(|_| t.begin(key, HOME).unwrap()).collect();
        let e = t.begin(key, HOME).err().unwrap();
        assert_eq!(e.retry_after(), Some(1));
        drop(held);
        assert_eq!(t.tracked(), (0, 0), "nothing decided, nothing kept");
        t.begin(key, HOME).unwrap().finish(false);
        assert_eq!(t.tracked(), (1, 1));
    }

    #[test]
    fn windows_end_and_tables_stay_bounded() {
        let clock = Clock::manual();
        let t = LoginThrottle::new(LoginLimits { per_address: 1000, ..limits() }, clock.clone());
        for i in 0..100 {
            let key = t.text_key(&format!("user{i}"));
            t.begin(key, HOME).unwrap().finish(false);
            clock.advance(Duration::from_millis(10));
            assert!(t.tracked().0 <= limits().max_entries, "{:?}", t.tracked());
        }
        for _ in 0..3 {
            t.begin(t.text_key("bob"), HOME).unwrap().finish(false);
        }
        let e = t.begin(t.text_key("BOB "), HOME).err().unwrap();
        assert_eq!(e.retry_after(), Some(60));
        clock.advance(Duration::from_secs(59));
        assert_eq!(t.begin(t.text_key("bob"), HOME).err().unwrap().retry_after(), Some(1));
        clock.advance(Duration::from_secs(1));
        t.begin(t.text_key("bob"), HOME).unwrap().finish(true);
    }
}
