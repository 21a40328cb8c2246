//! The time source of the board's rules that count time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
