//! A request's upstream budget: how many upstream fetches, and how many bytes of answers,
//! one client request may cause. One [`Budget`] is made per request (a batch shares one) and
//! every fetch asks it first ([`Budget::spend_fetch`]) and accounts its answer's bytes after
//! ([`Budget::spend_bytes`]); a request whose budget is spent is refused with an error that
//! names the budget and its numbers ([`BudgetSpent`]). The request's EVM runs (`eth_call`,
//! `eth_estimateGas`) stop [`BudgetLimits::evm`] after it arrived ([`Budget::evm_deadline`]):
//! a batch of gas-burning calls is answered in bounded time, its late calls refused.
//!
//! The budget is cloneable (its counters are shared atomics), so that every layer a request
//! goes through — the execution client here, the beacon client later — spends from the same
//! one. It is found through [`Budget::current`], set for a request's future with
//! [`Budget::scope`]: code that fetches need not thread it through every signature.
//!
//! Not here: the fetching (the upstream clients), the error's JSON-RPC shape.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// The bounds of one request's upstream budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Upstream fetches (requests to the execution RPC or the Beacon API).
    pub fetches: u64,
    /// Bytes of upstream answers.
    pub bytes: u64,
    /// How long after the request arrived its EVM runs may go on, all its calls together.
    pub evm: Duration,
}

impl Default for BudgetLimits {
    /// 1024 fetches and 256 MiB: the widest request the default bounds allow (a 64-block
    /// `eth_getLogs`, a batch of ordinary calls) fits; a batch of 100 of those does not.
    /// EVM runs: 10 s, twice geth's 5 s for one call.
    fn default() -> BudgetLimits {
        BudgetLimits {
            fetches: 1024,
            bytes: 256 << 20,
            evm: Duration::from_secs(10),
        }
    }
}

/// One request's upstream budget, shared by its clones.
#[derive(Clone, Debug)]
pub struct Budget {
    inner: Arc<Counters>,
}

#[derive(Debug)]
struct Counters {
    limits: BudgetLimits,
    fetches: AtomicU64,
    bytes: AtomicU64,
    arrived: Instant,
}

/// A budget found spent: which one, its bound, and what was asked of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the request's upstream budget of {limit} {what} is spent ({used} used): narrow the request or split the batch"
)]
pub struct BudgetSpent {
    /// `fetches` or `bytes`.
    pub what: &'static str,
    /// The budget's bound.
    pub limit: u64,
    /// What the request has used, this fetch included.
    pub used: u64,
}

tokio::task_local! {
    static CURRENT: Budget;
}

impl Budget {
    /// A fresh budget of `limits`.
    pub fn new(limits: BudgetLimits) -> Budget {
        Budget {
            inner: Arc::new(Counters {
                limits,
                fetches: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                arrived: Instant::now(),
            }),
        }
    }

    /// Takes one fetch from the budget, before the fetch is made; refused when the fetches
    /// are spent, or the bytes already are.
    pub fn spend_fetch(&self) -> Result<(), BudgetSpent> {
        let c = &self.inner;
        let bytes = c.bytes.load(Ordering::Relaxed);
        if bytes >= c.limits.bytes {
            return Err(BudgetSpent {
                what: "bytes",
                limit: c.limits.bytes,
                used: bytes,
            });
        }
        let used = c.fetches.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if used > c.limits.fetches {
            return Err(BudgetSpent {
                what: "fetches",
                limit: c.limits.fetches,
                used,
            });
        }
        Ok(())
    }

    /// Accounts `n` bytes of an answer; refused when that passes the bytes budget.
    pub fn spend_bytes(&self, n: u64) -> Result<(), BudgetSpent> {
        let c = &self.inner;
        let used = c.bytes.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if used > c.limits.bytes {
            return Err(BudgetSpent {
                what: "bytes",
                limit: c.limits.bytes,
                used,
            });
        }
        Ok(())
    }

    /// When the request's EVM runs must have stopped.
    pub fn evm_deadline(&self) -> Instant {
        self.inner.arrived + self.inner.limits.evm
    }

    /// The bound behind [`Budget::evm_deadline`].
    pub fn evm_limit(&self) -> Duration {
        self.inner.limits.evm
    }

    /// Bytes left to read: an answer's read can be bounded by it.
    pub fn bytes_left(&self) -> u64 {
        let c = &self.inner;
        c.limits
            .bytes
            .saturating_sub(c.bytes.load(Ordering::Relaxed))
    }

    /// Fetches made (or refused) so far.
    pub fn fetches_used(&self) -> u64 {
        self.inner.fetches.load(Ordering::Relaxed)
    }

    /// The budget of the request being answered, when one was set with [`Budget::scope`].
    pub fn current() -> Option<Budget> {
        CURRENT.try_with(Budget::clone).ok()
    }

    /// Runs `future` with `self` as its [`Budget::current`].
    pub async fn scope<F: std::future::Future>(self, future: F) -> F::Output {
        CURRENT.scope(self, future).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_past_the_budget_are_refused_naming_it() {
        let budget = Budget::new(BudgetLimits {
            fetches: 2,
            bytes: 100,
            evm: Duration::from_secs(1),
        });
        let shared = budget.clone();
        assert!(budget.spend_fetch().is_ok());
        assert!(shared.spend_fetch().is_ok(), "clones spend from one budget");
        let e = budget.spend_fetch().unwrap_err();
        assert_eq!(
            e,
            BudgetSpent {
                what: "fetches",
                limit: 2,
                used: 3
            }
        );
        assert!(
            e.to_string()
                .contains("budget of 2 fetches is spent (3 used)"),
            "{e}"
        );
    }

    #[test]
    fn bytes_past_the_budget_are_refused_and_stop_further_fetches() {
        let budget = Budget::new(BudgetLimits {
            fetches: 10,
            bytes: 100,
            evm: Duration::from_secs(1),
        });
        assert!(budget.spend_bytes(60).is_ok());
        assert_eq!(budget.bytes_left(), 40);
        let e = budget.spend_bytes(50).unwrap_err();
        assert_eq!((e.what, e.limit, e.used), ("bytes", 100, 110));
        assert_eq!(budget.spend_fetch().unwrap_err().what, "bytes");
    }

    #[test]
    fn the_evm_deadline_is_the_bound_after_the_request_arrived() {
        let before = Instant::now();
        let budget = Budget::new(BudgetLimits {
            evm: Duration::from_secs(7),
            ..BudgetLimits::default()
        });
        let deadline = budget.evm_deadline();
        assert!(deadline >= before + Duration::from_secs(7));
        assert!(deadline <= Instant::now() + Duration::from_secs(7));
        assert_eq!(
            budget.clone().evm_deadline(),
            deadline,
            "one for the request"
        );
    }

    #[tokio::test]
    async fn the_current_budget_is_the_scopes() {
        assert!(Budget::current().is_none());
        let budget = Budget::new(BudgetLimits {
            fetches: 1,
            bytes: 1,
            evm: Duration::from_secs(1),
        });
        let used = budget.clone().scope(async {
            Budget::current().unwrap().spend_fetch().unwrap();
            Budget::current().unwrap().fetches_used()
        });
        assert_eq!(used.await, 1);
        assert_eq!(budget.fetches_used(), 1);
    }
}
