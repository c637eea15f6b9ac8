//! The pace of `--verify sample`'s KZG checks: a share of the wall clock, earned back after
//! each check.
//!
//! Checking a blob-carrying answer's KZG proofs costs from milliseconds (a few blob proofs) to
//! seconds (72 blobs of cell proofs: about 64 ms a blob). A fixed "one call in N" spends
//! seconds of every N calls at 72 blobs and leaves most small calls unchecked. Paced by time,
//! a check is due once the time spent on the checks before it has been earned back at the
//! share: at 10 %, a 4.6 s check is followed by 46 s without one, and calls of a few blobs a
//! slot apart are all checked. Time earned while nothing was due is not saved up: a burst of
//! calls after a quiet hour gets one check, not an hour's worth.
//!
//! What does not live here: which call carries blobs, and what is checked (see the crate root).

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::Clock;

/// The share of the wall clock KZG checks may take, by default (percent).
pub const DEFAULT_KZG_PERCENT: u8 = 10;

/// KZG checks paced to `percent` of the wall clock.
#[derive(Clone, Debug)]
pub struct KzgPace {
    percent: u8,
    /// Check time not yet earned back, as of `at`.
    owed: Duration,
    at: Instant,
}

impl KzgPace {
    /// A pace of `percent` (1–100; 0 is taken as 1) that owes nothing at `now`.
    pub fn new(percent: u8, now: Instant) -> KzgPace {
        KzgPace {
            percent: percent.clamp(1, 100),
            owed: Duration::ZERO,
            at: now,
        }
    }

    /// Whether a check is due at `now`: the time of every check before has been earned back.
    pub fn due(&self, now: Instant) -> bool {
        self.owed_at(now).is_zero()
    }

    /// Records a check that took `spent`, ending at `now`.
    pub fn spent(&mut self, spent: Duration, now: Instant) {
        self.owed = self.owed_at(now).saturating_add(spent);
        self.at = now;
    }

    /// What is still owed at `now` (earned at `percent` of the time since `at`).
    fn owed_at(&self, now: Instant) -> Duration {
        let earned = now.saturating_duration_since(self.at) * u32::from(self.percent) / 100;
        self.owed.saturating_sub(earned)
    }
}

/// A clock that moves only when told, for a [`crate::Verifier::with_clock`] whose sampling
/// must not depend on how fast the machine runs (tests, replays).
#[derive(Clone, Debug)]
pub struct HandClock(Arc<Mutex<Instant>>);

impl Default for HandClock {
    fn default() -> HandClock {
        HandClock(Arc::new(Mutex::new(Instant::now())))
    }
}

impl HandClock {
    /// The clock, to hand to a verifier.
    pub fn clock(&self) -> Clock {
        let now = self.0.clone();
        // Only this clone and `advance` touch the instant: a poisoned lock still holds one.
        Arc::new(move || *now.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Moves the clock on by `by`.
    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_check_is_due_again_once_its_time_is_earned_back_at_the_share() {
        let start = Instant::now();
        let mut pace = KzgPace::new(10, start);
        assert!(pace.due(start));
        // A 4.6 s check (72 blobs of cell proofs) at 10 %: 46 s without one.
        let end = start + 4600 * MS;
        pace.spent(4600 * MS, end);
        assert!(!pace.due(end));
        assert!(!pace.due(end + 45_999 * MS));
        assert!(pace.due(end + 46_000 * MS));
        // At 100 %, as long as the check took.
        let mut all = KzgPace::new(100, start);
        all.spent(300 * MS, start);
        assert!(!all.due(start + 299 * MS));
        assert!(all.due(start + 300 * MS));
    }

    #[test]
    fn owed_time_adds_up_and_quiet_time_is_not_saved() {
        let start = Instant::now();
        let mut pace = KzgPace::new(20, start);
        // Two checks back to back owe both: 10 ms + 30 ms at 20 % is 200 ms.
        pace.spent(10 * MS, start);
        pace.spent(30 * MS, start);
        assert!(!pace.due(start + 199 * MS));
        assert!(pace.due(start + 200 * MS));
        // An hour of quiet then earns nothing ahead: the next check owes again in full.
        let later = start + Duration::from_secs(3600);
        assert!(pace.due(later));
        pace.spent(10 * MS, later);
        assert!(!pace.due(later + 49 * MS));
        assert!(pace.due(later + 50 * MS));
    }

    #[test]
    fn the_share_is_kept_between_one_and_a_hundred() {
        let start = Instant::now();
        let mut none = KzgPace::new(0, start);
        none.spent(MS, start);
        assert!(!none.due(start + 99 * MS));
        assert!(none.due(start + 100 * MS));
        let mut over = KzgPace::new(250, start);
        over.spent(MS, start);
        assert!(over.due(start + MS));
        // At the instant the check ended, it is owed in full.
        assert!(!over.due(start));
    }
}
