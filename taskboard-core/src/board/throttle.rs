//! Throttling of failed logins: per login and per client address, in
//! fixed windows that start at the first failure.
//!
//! A login that fails `per_login` times within `window` of its first
//! failure, or an address from which `per_address` logins failed, is
//! refused (429 with the time left) until that window has passed, before
//! any password is checked. A success clears its login's failures (not
//! its address's).
//!
//! The failures are kept in the store (`LOGIN_FAILURES`), so every
//! server process of one board counts the same attempts: three processes
//! behind a balancer allow what one allows. A login is counted under the
//! member it names, or under a keyed hash of its text (the key derives
//! from the board's JWT secret, which all its processes share), so the
//! store holds no typed text. Attempts still being checked count against
//! the limit too, in the memory of the process checking them, so a burst
//! of parallel attempts cannot slip past it. Finished windows are swept
//! a few at a time by every failure recorded, so the table holds only the
//! windows of the last `window`.
//!
//! The sign-ins of single sign-on a client address starts are counted
//! the same way, in the same table and windows, under a key of their own
//! (`s`, then the address), each start counted as it is stored
//! (docs/decisions.md 20.s).

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use hmac::{Hmac, Mac};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use super::Clock;
use crate::error::{Error, Result};
use crate::records::{RecordWrites, Records};
use crate::storage::codec::Key;
use crate::storage::tables::{LOGIN_FAILURE_AGE, LOGIN_FAILURES};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};

/// The limits of login throttling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Failures of one login allowed within a window.
    pub per_login: u32,
    /// Failures from one client address allowed within a window.
    pub per_address: u32,
    /// Length of a window, from its first failure.
    pub window: Duration,
}

impl Default for LoginLimits {
    fn default() -> LoginLimits {
        LoginLimits { per_login: 10, per_address: 100, window: Duration::from_secs(15 * 60) }
    }
}

/// Finished windows swept by each failure recorded.
const SWEEP: usize = 8;

/// What an attempt is counted under: the member its login names, a keyed
/// hash of a login that names none, or the client address; and the
/// sign-ins a client address started (`board::oidc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CountKey {
    Member(Uuid),
    Text([u8; 16]),
    Address(IpAddr),
    SignIns(IpAddr),
}

impl CountKey {
    /// The address an attempt is counted under: IPv4 addresses whole,
    /// IPv6 ones by their /64 prefix, which one host commonly holds whole.
    fn address(ip: IpAddr) -> CountKey {
        CountKey::Address(match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let mut segments = v6.segments();
                    segments[4..].fill(0);
                    IpAddr::V6(segments.into())
                }
            },
            v4 => v4,
        })
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            CountKey::Member(id) => Key::new().u8(b'm').uuid(*id).build(),
            CountKey::Text(hash) => Key::new().u8(b't').bytes(hash).build(),
            CountKey::Address(IpAddr::V4(a)) => Key::new().u8(b'4').bytes(&a.octets()).build(),
            CountKey::Address(IpAddr::V6(a)) => Key::new().u8(b'6').bytes(&a.octets()).build(),
            CountKey::SignIns(IpAddr::V4(a)) => Key::new().u8(b's').u8(b'4').bytes(&a.octets()).build(),
            CountKey::SignIns(IpAddr::V6(a)) => Key::new().u8(b's').u8(b'6').bytes(&a.octets()).build(),
        }
    }

    /// The sign-ins started from an address, counted as
    /// [`CountKey::address`] counts it.
    fn sign_ins(ip: IpAddr) -> CountKey {
        match CountKey::address(ip) {
            CountKey::Address(a) => CountKey::SignIns(a),
            other => other,
        }
    }
}

/// A window as stored: when its first failure was, and how many there
/// have been since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Window {
    start: Timestamp,
    failures: u32,
}

fn age_key(start: Timestamp, key: &[u8]) -> Vec<u8> {
    Key::new().u64(start.as_millisecond().max(0) as u64).bytes(key).build()
}

/// The stored windows an attempt is judged by.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stored {
    login: Option<Window>,
    address: Option<Window>,
}

/// The throttle of one board: its limits, and the attempts this process
/// is checking.
pub(crate) struct LoginThrottle {
    limits: LoginLimits,
    clock: Clock,
    text_key: [u8; 32],
    checking: Mutex<HashMap<CountKey, u32>>,
}

/// An attempt let through: it holds its places among the attempts being
/// checked until its outcome is known.
pub(crate) struct Attempt<'a> {
    throttle: &'a LoginThrottle,
    login: CountKey,
    address: Option<CountKey>,
    stored: Stored,
}

/// What an attempt's outcome changes in the store, if anything.
pub(crate) enum Outcome {
    Failed { login: CountKey, address: Option<CountKey>, window: Duration },
    Cleared { login: CountKey, stored: Window },
}

impl LoginThrottle {
    /// `text_key` keys the hash of logins that name no member.
    pub fn new(limits: LoginLimits, clock: Clock, text_key: [u8; 32]) -> LoginThrottle {
        LoginThrottle { limits, clock, text_key, checking: Default::default() }
    }

    /// What an attempt at `login` is counted under, `member` being the
    /// member it names, if any.
    pub fn login_key(&self, login: &str, member: Option<Uuid>) -> CountKey {
        if let Some(id) = member {
            return CountKey::Member(id);
        }
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.text_key).expect("HMAC takes any key length");
        mac.update(login.trim().to_lowercase().as_bytes());
        let mut hash = [0; 16];
        hash.copy_from_slice(&mac.finalize().into_bytes()[..16]);
        CountKey::Text(hash)
    }

    /// Refuses an address that is over its limit; done before anything
    /// else is read.
    pub fn check_address(&self, r: &dyn ReadTxn, address: Option<IpAddr>) -> Result<()> {
        let Some(key) = address.map(CountKey::address) else { return Ok(()) };
        let now = self.clock.timestamp();
        let window = self.open_window(r, key, now)?;
        let busy = self.checking.lock().unwrap().get(&key).copied().unwrap_or(0);
        match self.refused(window, busy, self.limits.per_address, now) {
            Some(left) => Err(refusal("from this address", left)),
            None => Ok(()),
        }
    }

    fn open_window(&self, r: &dyn ReadTxn, key: CountKey, now: Timestamp) -> Result<Option<Window>> {
        let w: Option<Window> = r.record(LOGIN_FAILURES, &key.bytes())?;
        Ok(w.filter(|w| elapsed(w.start, now) < self.limits.window))
    }

    /// Reads the windows of a login and an address, inside the read that
    /// looks the login up.
    pub fn stored(&self, r: &dyn ReadTxn, login: CountKey, address: Option<IpAddr>) -> Result<Stored> {
        let now = self.clock.timestamp();
        let address = match address {
            Some(a) => self.open_window(r, CountKey::address(a), now)?,
            None => None,
        };
        Ok(Stored { login: self.open_window(r, login, now)?, address })
    }

    /// Lets an attempt through, or refuses it when its address or its
    /// login is over the limit (failures in the store plus attempts being
    /// checked here).
    pub fn begin(&self, login: CountKey, address: Option<IpAddr>, stored: Stored) -> Result<Attempt<'_>> {
        let address = address.map(CountKey::address);
        let now = self.clock.timestamp();
        let mut checking = self.checking.lock().unwrap();
        let busy = |key: &CountKey| checking.get(key).copied().unwrap_or(0);
        if let Some(a) = address {
            self.refused(stored.address, busy(&a), self.limits.per_address, now)
                .map_or(Ok(()), |left| Err(refusal("from this address", left)))?;
        }
        self.refused(stored.login, busy(&login), self.limits.per_login, now)
            .map_or(Ok(()), |left| Err(refusal("for this login", left)))?;
        for key in std::iter::once(login).chain(address) {
            *checking.entry(key).or_insert(0) += 1;
        }
        Ok(Attempt { throttle: self, login, address, stored })
    }

    /// The time left before a key may try again, if it may not now.
    fn refused(&self, window: Option<Window>, checking: u32, limit: u32, now: Timestamp) -> Option<Duration> {
        let failures = window.map_or(0, |w| w.failures);
        if failures + checking < limit {
            return None;
        }
        match window {
            Some(w) if failures >= limit => Some(self.limits.window.saturating_sub(elapsed(w.start, now))),
            // Full only with attempts still being checked: their outcome
            // is a moment away.
            _ => Some(Duration::from_secs(1)),
        }
    }

    /// Refuses a client address that started `limit` sign-ins within the
    /// window (429 with the time left), read before the provider is
    /// asked anything.
    pub fn check_sign_in(&self, r: &dyn ReadTxn, address: Option<IpAddr>, limit: u32) -> Result<()> {
        let Some(key) = address.map(CountKey::sign_ins) else { return Ok(()) };
        let now = self.clock.timestamp();
        let window = self.open_window(r, key, now)?;
        self.sign_in_refused(window, limit, now)
    }

    /// Counts a sign-in started from `address`, inside the write that
    /// stores it, refusing it when the address is at its limit: the
    /// check made inside the write, so parallel starts cannot pass it
    /// together.
    pub fn count_sign_in(
        &self,
        w: &mut dyn WriteTxn,
        address: Option<IpAddr>,
        limit: u32,
        now: Timestamp,
    ) -> Result<()> {
        let Some(key) = address.map(CountKey::sign_ins) else { return Ok(()) };
        let stored: Option<Window> = w.record(LOGIN_FAILURES, &key.bytes())?;
        let window = stored.filter(|w| elapsed(w.start, now) < self.limits.window);
        self.sign_in_refused(window, limit, now)?;
        Outcome::Failed { login: key, address: None, window: self.limits.window }.apply(w, now)
    }

    fn sign_in_refused(&self, window: Option<Window>, limit: u32, now: Timestamp) -> Result<()> {
        match self.refused(window, 0, limit, now) {
            Some(left) => Err(Error::too_many_requests(
                "too many sign-ins started from this address; try again later",
                left,
            )),
            None => Ok(()),
        }
    }

    #[cfg(test)]
    fn checking(&self) -> usize {
        self.checking.lock().unwrap().len()
    }
}

fn elapsed(start: Timestamp, now: Timestamp) -> Duration {
    Duration::try_from(now.duration_since(start)).unwrap_or(Duration::ZERO)
}

fn refusal(what: &str, left: Duration) -> Error {
    Error::too_many_requests(format!("too many failed logins {what}; try again later"), left)
}

impl Attempt<'_> {
    /// The change to the store its outcome makes: a failure counts, a
    /// success clears the login's failures; `None` when there is nothing
    /// to change.
    pub fn finish(self, success: bool) -> Option<Outcome> {
        if success {
            let stored = self.stored.login?;
            return Some(Outcome::Cleared { login: self.login, stored });
        }
        let window = self.throttle.limits.window;
        Some(Outcome::Failed { login: self.login, address: self.address, window })
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        let mut checking = self.throttle.checking.lock().unwrap();
        for key in std::iter::once(self.login).chain(self.address) {
            if let Some(n) = checking.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    checking.remove(&key);
                }
            }
        }
    }
}

impl Outcome {
    /// Writes the outcome, inside a write transaction at `now`.
    pub fn apply(self, w: &mut dyn WriteTxn, now: Timestamp) -> Result<()> {
        match self {
            Outcome::Cleared { login, stored } => {
                let key = login.bytes();
                w.delete(LOGIN_FAILURES, &key)?;
                w.delete(LOGIN_FAILURE_AGE, &age_key(stored.start, &key))?;
            }
            Outcome::Failed { login, address, window } => {
                let count = |w: &mut dyn WriteTxn, key: CountKey| -> Result<()> {
                    let key = key.bytes();
                    // Read again: another process may have counted since.
                    let current: Option<Window> = w.record(LOGIN_FAILURES, &key)?;
                    let next = match current {
                        Some(c) if elapsed(c.start, now) < window => Window { failures: c.failures + 1, ..c },
                        _ => Window { start: now, failures: 1 },
                    };
                    if let Some(c) = current.filter(|c| c.start != next.start) {
                        w.delete(LOGIN_FAILURE_AGE, &age_key(c.start, &key))?;
                    }
                    w.put_record(LOGIN_FAILURES, &key, &next)?;
                    w.put(LOGIN_FAILURE_AGE, &age_key(next.start, &key), &[])?;
                    Ok(())
                };
                count(w, login)?;
                if let Some(a) = address {
                    count(w, a)?;
                }
                sweep(w, now, window)?;
            }
        }
        Ok(())
    }
}

/// Removes up to [`SWEEP`] windows that ended before `now`.
fn sweep(w: &mut dyn WriteTxn, now: Timestamp, window: Duration) -> Result<()> {
    let span = SignedDuration::try_from(window).map_err(Error::internal)?;
    let cut = now.checked_sub(span).map_err(Error::internal)?.as_millisecond().max(0) as u64;
    let mut ended = Vec::new();
    w.scan(LOGIN_FAILURE_AGE, KeyRange::all(), Direction::Forward, &mut |k, _| {
        let start = k.get(..8).map(|b| u64::from_be_bytes(b.try_into().unwrap())).unwrap_or(u64::MAX);
        if start >= cut || ended.len() == SWEEP {
            return Ok(Scan::Stop);
        }
        ended.push(k.to_vec());
        Ok(Scan::Continue)
    })?;
    for age in ended {
        w.delete(LOGIN_FAILURE_AGE, &age)?;
        w.delete(LOGIN_FAILURES, &age[8..])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_addresses_count_by_their_64_prefix() {
        let key = |s: &str| CountKey::address(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2:aaaa::1"), key("2001:db8:1:2:bbbb::2"));
        assert_ne!(key("2001:db8:1:2:aaaa::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:10.0.0.1"), key("10.0.0.1"));
    }

    #[test]
    fn logins_hash_alike_in_every_process_of_a_board_and_apart_across_boards() {
        let limits = LoginLimits::default();
        let one = LoginThrottle::new(limits, Clock::manual(), [1; 32]);
        let again = LoginThrottle::new(limits, Clock::manual(), [1; 32]);
        let other = LoginThrottle::new(limits, Clock::manual(), [2; 32]);
        assert_eq!(one.login_key("Ana ", None), again.login_key("ana", None));
        assert_ne!(one.login_key("ana", None), other.login_key("ana", None));
        assert_ne!(one.login_key("ana", None), one.login_key("bob", None));
    }

    #[test]
    fn attempts_being_checked_count_and_give_their_place_back() {
        let limits = LoginLimits { per_login: 3, per_address: 5, window: Duration::from_secs(60) };
        let t = LoginThrottle::new(limits, Clock::manual(), [0; 32]);
        let key = t.login_key("ana", None);
        let home = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        let held: Vec<_> = (0..3).map(|_| t.begin(key, home, Stored::default()).unwrap()).collect();
        let e = t.begin(key, home, Stored::default()).err().unwrap();
        assert_eq!(e.retry_after(), Some(1));
        drop(held);
        assert_eq!(t.checking(), 0, "nothing decided, nothing kept");
    }
}
