//! When a delivery is attempted again.

use std::time::Duration;

use jiff::Timestamp;

/// Deliveries of one webhook that may wait for a retry at once (the
/// default of [`DeliveryPolicy::max_pending`]).
pub const MAX_PENDING: usize = 1_000;

/// Timeouts and the retry schedule of deliveries.
#[derive(Debug, Clone)]
pub struct DeliveryPolicy {
    /// How long an attempt may take before it counts as failed.
    pub timeout: Duration,
    /// The delays after the first failed attempts, in order.
    pub delays: Vec<Duration>,
    /// The delay after every later failed attempt.
    pub then_every: Duration,
    /// Up to this fraction of a delay is added at random, so receivers
    /// that come back are not hit by every sender at once.
    pub jitter: f64,
    /// Once this long has passed since the event (or since a redelivery
    /// was asked for), a failed attempt makes the delivery `failed`.
    pub give_up_after: Duration,
    /// After a secret is rotated, the previous secret signs attempts
    /// beside the new one this long.
    pub rotation_grace: Duration,
    /// Events a sender sends to one webhook before it records its
    /// progress (one write per batch).
    pub batch: usize,
    /// Deliveries of one webhook waiting for a retry at most. While a
    /// webhook has this many its cursor stays where it is, and the later
    /// events wait in the event log until some of them are done.
    pub max_pending: usize,
}

impl Default for DeliveryPolicy {
    fn default() -> DeliveryPolicy {
        let s = Duration::from_secs;
        DeliveryPolicy {
            timeout: s(10),
            delays: vec![s(5), s(30), s(120), s(600), s(1800), s(3600)],
            then_every: s(7200),
            jitter: 0.2,
            give_up_after: s(24 * 3600),
            rotation_grace: s(24 * 3600),
            batch: 256,
            max_pending: MAX_PENDING,
        }
    }
}

impl DeliveryPolicy {
    /// When a delivery whose `attempts`-th attempt just failed is tried
    /// again, or `None` when it has failed for good.
    pub fn next_attempt(&self, attempts: u32, retry_from: Timestamp, now: Timestamp) -> Option<Timestamp> {
        let elapsed = now.duration_since(retry_from);
        if elapsed >= jiff::SignedDuration::try_from(self.give_up_after).ok()? {
            return None;
        }
        let index = attempts.saturating_sub(1) as usize;
        let delay = self.delays.get(index).copied().unwrap_or(self.then_every);
        let extra = delay.mul_f64(self.jitter.clamp(0.0, 1.0) * random_fraction());
        now.checked_add(delay + extra).ok()
    }

    /// How long a sender's claim on a webhook holds once taken or
    /// renewed: two attempts that run into the timeout, with a margin for
    /// recording the progress. A sender starts no attempt that could end
    /// after its claim, and renews the claim with each batch; one that
    /// dies holds its webhooks this long.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + self.timeout.max(Duration::from_secs(5))
    }
}

fn random_fraction() -> f64 {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_with_jitter_until_a_day_has_passed() {
        let p = DeliveryPolicy::default();
        let start = Timestamp::now();
        let after =
            |attempts, now: Timestamp| p.next_attempt(attempts, start, now).unwrap().duration_since(now);
        let secs = |a| after(a, start).as_secs_f64();
        assert!((5.0..=6.0).contains(&secs(1)));
        assert!((30.0..=36.0).contains(&secs(2)));
        assert!((3600.0..=4320.0).contains(&secs(6)));
        assert!((7200.0..=8640.0).contains(&secs(7)));
        assert!((7200.0..=8640.0).contains(&secs(12)));
        let late = start.checked_add(jiff::SignedDuration::from_hours(23)).unwrap();
        assert!(p.next_attempt(20, start, late).is_some());
        let day = start.checked_add(jiff::SignedDuration::from_hours(24)).unwrap();
        assert!(p.next_attempt(20, start, day).is_none());
    }
}
