//! A budget of capacity units per second shared by concurrent requests: what paces a rate
//! limited scan (read units) and a migration (write units).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::capacity::Clock;

/// A shared budget of capacity units per second: a token bucket refilled at `rate`, holding at
/// most one second's worth, that may go into debt.
///
/// A request may start while the balance is not negative; it then reserves its estimated
/// cost (given, or the cost of the last request settled: so concurrent requests space out
/// instead of all starting at once) and, once answered, is charged its real cost instead. It starts empty, so over any
/// run the units charged for requests started by time `t` are at most `rate × t`: all that
/// can exceed it is what the requests in flight at the last start cost.
#[derive(Debug)]
pub struct UnitBudget {
    rate: f64,
    clock: Arc<dyn Clock>,
    state: Mutex<BudgetState>,
}

#[derive(Debug)]
struct BudgetState {
    /// Units available (negative: owed).
    balance: f64,
    /// When `balance` was last refilled, on `clock`.
    at: Duration,
    /// What the next request is expected to cost when no estimate is given: the last
    /// request's units.
    estimate: f64,
}

impl UnitBudget {
    /// A budget of `rate` units per second (positive and finite), empty at the clock's now.
    pub fn new(rate: f64, clock: Arc<dyn Clock>) -> Self {
        let at = clock.now();
        UnitBudget {
            rate,
            clock,
            state: Mutex::new(BudgetState {
                balance: 0.0,
                at,
                estimate: 0.0,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        // The state is a few numbers updated in one step: a panic elsewhere cannot leave it
        // half-written.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.clock.now();
        // A clock that went back gives no credit twice.
        let elapsed = now.saturating_sub(state.at).as_secs_f64();
        state.balance = (state.balance + elapsed * self.rate).min(self.rate);
        state.at = state.at.max(now);
        state
    }

    /// Reserves the estimated cost of a request if the balance allows one to start now
    /// (`Ok(reserved)`), or says how long until it will (`Err(wait)`).
    #[cfg(test)]
    pub(crate) fn try_reserve(&self) -> Result<f64, Duration> {
        self.try_reserve_units(None)
    }

    /// Reserves `estimate` units (or, when `None`, the last request's cost) if the balance
    /// allows a request to start now (`Ok(reserved)`), or says how long until it will
    /// (`Err(wait)`).
    pub(crate) fn try_reserve_units(&self, estimate: Option<f64>) -> Result<f64, Duration> {
        let mut state = self.state();
        if state.balance >= 0.0 {
            let reserved = estimate
                .filter(|e| e.is_finite() && *e >= 0.0)
                .unwrap_or(state.estimate);
            state.balance -= reserved;
            Ok(reserved)
        } else {
            let wait = -state.balance / self.rate;
            // A tiny rate can ask for a wait no `Duration` holds: wait "forever".
            Err(Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX))
        }
    }

    /// Waits until a request may start, and reserves its estimated cost.
    pub async fn acquire(&self) -> f64 {
        self.acquire_units(None).await
    }

    /// Waits until a request may start, and reserves `estimate` units (or, when `None`, the
    /// last request's cost).
    pub async fn acquire_units(&self, estimate: Option<f64>) -> f64 {
        loop {
            match self.try_reserve_units(estimate) {
                Ok(reserved) => return reserved,
                // Checked again after the sleep: other segments may have spent the budget.
                Err(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// Charges a request's real cost `used` in place of what it `reserved`.
    pub fn settle(&self, reserved: f64, used: f64) {
        let mut state = self.state();
        let used = if used.is_finite() { used.max(0.0) } else { 0.0 };
        state.balance += reserved - used;
        if used > 0.0 {
            state.estimate = used;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::ManualClock;

    fn budget(rate: f64) -> (UnitBudget, ManualClock) {
        let clock = ManualClock::new();
        (UnitBudget::new(rate, Arc::new(clock.clone())), clock)
    }

    #[test]
    fn the_first_request_starts_at_once_and_its_cost_is_then_waited_for() {
        // Rates and costs that binary fractions hold exactly, so the waits compare equal.
        let (budget, clock) = budget(8.0);
        assert_eq!(budget.try_reserve(), Ok(0.0));
        budget.settle(0.0, 4.0);
        // 4 units owed at 8/s: half a second.
        assert_eq!(budget.try_reserve(), Err(Duration::from_millis(500)));
        clock.advance(Duration::from_millis(250));
        assert_eq!(budget.try_reserve(), Err(Duration::from_millis(250)));
        clock.advance(Duration::from_millis(250));
        // The next request reserves the last page's cost.
        assert_eq!(budget.try_reserve(), Ok(4.0));
        assert_eq!(budget.try_reserve(), Err(Duration::from_millis(500)));
    }

    #[test]
    fn reservations_space_out_concurrent_requests() {
        let (budget, clock) = budget(4.0);
        assert_eq!(budget.try_reserve(), Ok(0.0));
        budget.settle(0.0, 2.0);
        clock.advance(Duration::from_millis(500));
        // Two segments ready at once: the first reserves 2 units, the second waits for them.
        assert_eq!(budget.try_reserve(), Ok(2.0));
        assert_eq!(budget.try_reserve(), Err(Duration::from_millis(500)));
        // The first costs less than reserved: the difference comes back.
        budget.settle(2.0, 1.0);
        assert_eq!(budget.try_reserve(), Err(Duration::from_millis(250)));
    }

    #[test]
    fn idle_time_saves_at_most_one_second_of_budget() {
        let (budget, clock) = budget(10.0);
        clock.advance(Duration::from_secs(60));
        assert_eq!(budget.try_reserve(), Ok(0.0));
        budget.settle(0.0, 25.0);
        // 10 saved, 25 spent: 15 owed, not a minute's 600 units of credit.
        assert_eq!(budget.try_reserve(), Err(Duration::from_millis(1500)));
    }

    /// Whatever the costs, units charged for requests started by `t` stay within `rate × t`
    /// plus what the requests in flight at the last start cost: the documented guarantee.
    #[test]
    fn units_stay_within_rate_times_elapsed_plus_the_pages_in_flight() {
        let rate = 7.0;
        let (budget, clock) = budget(rate);
        let mut rng = fastrand::Rng::with_seed(10);
        let concurrency = 3;
        // (reserved, cost) of the requests in flight.
        let mut in_flight: Vec<(f64, f64)> = Vec::new();
        let mut charged = 0.0;
        let mut largest: f64 = 0.0;
        for _ in 0..2_000 {
            if in_flight.len() < concurrency {
                match budget.try_reserve() {
                    Ok(reserved) => {
                        let cost = rng.f64() * 20.0;
                        largest = largest.max(cost);
                        in_flight.push((reserved, cost));
                        let started = charged + in_flight.iter().map(|(_, c)| c).sum::<f64>();
                        let t = clock.now().as_secs_f64();
                        assert!(
                            started <= rate * t + concurrency as f64 * largest + 1e-9,
                            "{started} units by {t} s"
                        );
                        continue;
                    }
                    Err(wait) => assert!(wait > Duration::ZERO),
                }
            }
            // Time passes; sometimes a request in flight answers.
            clock.advance(Duration::from_millis(rng.u64(1..300)));
            if !in_flight.is_empty() && rng.bool() {
                let (reserved, cost) = in_flight.remove(rng.usize(..in_flight.len()));
                budget.settle(reserved, cost);
                charged += cost;
            }
        }
        assert!(charged > 1_000.0, "the budget let requests through");
    }

    #[test]
    fn a_clock_going_back_gives_no_credit_twice() {
        let (budget, clock) = budget(10.0);
        clock.set(Duration::from_secs(5));
        assert_eq!(budget.try_reserve(), Ok(0.0));
        budget.settle(0.0, 20.0);
        clock.set(Duration::from_secs(2));
        assert_eq!(budget.try_reserve(), Err(Duration::from_secs(1)));
        clock.set(Duration::from_secs(5));
        assert_eq!(budget.try_reserve(), Err(Duration::from_secs(1)));
        clock.set(Duration::from_secs(6));
        assert!(budget.try_reserve().is_ok());
    }

    #[test]
    fn a_cost_that_is_not_a_number_charges_nothing() {
        let (budget, _clock) = budget(1.0);
        assert_eq!(budget.try_reserve(), Ok(0.0));
        budget.settle(0.0, f64::NAN);
        budget.settle(0.0, -3.0);
        assert_eq!(budget.try_reserve(), Ok(0.0));
    }

    #[test]
    fn a_tiny_rate_waits_instead_of_panicking() {
        let (budget, _clock) = budget(f64::MIN_POSITIVE);
        assert_eq!(budget.try_reserve(), Ok(0.0));
        budget.settle(0.0, 1e300);
        assert_eq!(budget.try_reserve(), Err(Duration::MAX));
    }

    #[test]
    fn a_known_estimate_is_reserved_instead_of_the_last_cost() {
        let (budget, clock) = budget(4.0);
        assert_eq!(budget.try_reserve_units(Some(4.0)), Ok(4.0));
        // 4 units owed at 4/s: a second.
        assert_eq!(
            budget.try_reserve_units(Some(1.0)),
            Err(Duration::from_secs(1))
        );
        budget.settle(4.0, 2.0);
        assert_eq!(
            budget.try_reserve_units(Some(1.0)),
            Err(Duration::from_millis(500))
        );
        clock.advance(Duration::from_millis(500));
        assert_eq!(budget.try_reserve_units(Some(1.0)), Ok(1.0));
        // A nonsense estimate falls back to the last cost.
        clock.advance(Duration::from_millis(250));
        assert_eq!(budget.try_reserve_units(Some(f64::NAN)), Ok(2.0));
    }
}
