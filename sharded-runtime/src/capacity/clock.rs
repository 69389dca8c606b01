//! Time for rate computations: the system clock in production, a manual clock in tests.
//!
//! Rates (units per second over a sliding window, per-key limit emulation) read time through
//! [`Clock`], so a test can move time forward by exactly the amount it needs instead of
//! sleeping.
//!
//! ```
//! use std::time::Duration;
//! use sharded::capacity::{Clock, ManualClock};
//! let clock = ManualClock::new();
//! let seen_by_collector = clock.clone(); // shares the same time
//! clock.advance(Duration::from_secs(61));
//! assert_eq!(seen_by_collector.now(), Duration::from_secs(61));
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A source of time: the duration since an arbitrary origin that stays fixed for the clock's
/// lifetime.
///
/// Only differences between two readings of the same clock mean anything. Readings never go
/// backwards for [`SystemClock`]; a [`ManualClock`] goes wherever its test sets it.
///
/// ```
/// use std::time::Duration;
/// use sharded::capacity::{Clock, SystemClock};
/// fn elapsed(clock: &dyn Clock, since: Duration) -> Duration {
///     clock.now().saturating_sub(since)
/// }
/// let clock = SystemClock::new();
/// let start = clock.now();
/// assert!(elapsed(&clock, start) < Duration::from_secs(60));
/// ```
pub trait Clock: Send + Sync + fmt::Debug {
    /// The time since this clock's origin.
    fn now(&self) -> Duration;
}

/// Reads the monotonic system clock ([`Instant`]); its origin is the moment it was created.
///
/// ```
/// use sharded::capacity::{Clock, SystemClock};
/// let clock = SystemClock::new();
/// let a = clock.now();
/// assert!(clock.now() >= a);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// A clock that only moves when told to, for tests; clones share one time.
///
/// It starts at zero. [`advance`](Self::advance) moves it forward (saturating at
/// [`Duration::MAX`]); [`set`](Self::set) puts it anywhere, also backwards, which lets a test
/// check that a consumer copes with a clock that jumps.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::{Clock, ManualClock};
/// let clock = ManualClock::new();
/// let shared: Arc<dyn Clock> = Arc::new(clock.clone());
/// clock.advance(Duration::from_millis(1500));
/// assert_eq!(shared.now(), Duration::from_millis(1500));
/// clock.set(Duration::from_secs(10));
/// assert_eq!(shared.now(), Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<Mutex<Duration>>,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock (and all its clones) forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now = now.saturating_add(by);
    }

    /// Sets the clock (and all its clones) to `to`.
    pub fn set(&self, to: Duration) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_starts_at_zero_and_moves_only_when_told() {
        let clock = ManualClock::new();
        assert_eq!(clock.now(), Duration::ZERO);
        assert_eq!(clock.now(), Duration::ZERO);
        clock.advance(Duration::from_millis(250));
        clock.advance(Duration::from_millis(250));
        assert_eq!(clock.now(), Duration::from_millis(500));
    }

    #[test]
    fn manual_clock_clones_share_time() {
        let a = ManualClock::new();
        let b = a.clone();
        let dynamic: Arc<dyn Clock> = Arc::new(a.clone());
        b.set(Duration::from_secs(7));
        assert_eq!(a.now(), Duration::from_secs(7));
        assert_eq!(dynamic.now(), Duration::from_secs(7));
        a.set(Duration::from_secs(3)); // backwards is allowed
        assert_eq!(b.now(), Duration::from_secs(3));
    }

    #[test]
    fn manual_clock_advance_saturates() {
        let clock = ManualClock::new();
        clock.set(Duration::MAX);
        clock.advance(Duration::from_secs(1));
        assert_eq!(clock.now(), Duration::MAX);
    }

    #[test]
    fn system_clock_is_monotonic_and_starts_near_zero() {
        let clock = SystemClock::new();
        let a = clock.now();
        let b = clock.now();
        assert!(b >= a);
        assert!(
            a < Duration::from_secs(5),
            "origin is creation time, got {a:?}"
        );
    }
}
