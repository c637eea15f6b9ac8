//! The one rule for which sync aggregates may anchor an answer: [`ParticipationPolicy`].
//!
//! A sync aggregate signed by a few committee members proves little: an attacker holding those
//! members' keys, with a lying beacon node, can sign any header. An anchor therefore needs at
//! least 2/3 of the committee by default (342 of 512, the supermajority the specs require to
//! finalize). A lower minimum may be configured, but never below the specs' safety threshold
//! (half the most participants the store has seen, `get_safety_threshold`) and never below one.
//!
//! Every anchor goes through [`ParticipationPolicy::check`]: a block signed by its child's
//! aggregate, the head's parent, the store's optimistic and supermajority headers, and the
//! proof verifier's signed headers. Blocks linked by parent roots to a header verified under
//! the rule inherit it. What does not live here: the signature itself (see `bls`), which
//! committee signs (see `store`).

use crate::Trust;
use crate::error::LightError;
use crate::spec::SYNC_COMMITTEE_SIZE;

/// 2/3 of the committee, rounded up: `342 * 3 >= 512 * 2`.
pub const SUPERMAJORITY_PARTICIPANTS: usize = (SYNC_COMMITTEE_SIZE * 2).div_ceil(3);

/// How many committee members must sign an aggregate for it to anchor an execution block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParticipationPolicy {
    min_participants: usize,
}

impl Default for ParticipationPolicy {
    fn default() -> Self {
        Self::SUPERMAJORITY
    }
}

impl ParticipationPolicy {
    /// The default: at least 2/3 of the committee.
    pub const SUPERMAJORITY: ParticipationPolicy = ParticipationPolicy {
        min_participants: SUPERMAJORITY_PARTICIPANTS,
    };

    /// The specs' `MIN_SYNC_COMMITTEE_PARTICIPANTS` (one signer): what moves the store's
    /// headers, which record their participants; anchoring holds them to the configured rule.
    pub const ANY_SIGNER: ParticipationPolicy = ParticipationPolicy {
        min_participants: 1,
    };

    /// A policy requiring `min_participants` signers (1 to 512). A minimum below 2/3 is
    /// logged as a warning, naming the value: it weakens what an answer rests on.
    pub fn new(min_participants: usize) -> Result<Self, LightError> {
        if !(1..=SYNC_COMMITTEE_SIZE).contains(&min_participants) {
            return Err(LightError::Config {
                field: "min_participants (1 to 512)",
            });
        }
        let policy = ParticipationPolicy { min_participants };
        #[cfg(feature = "log")]
        if policy.is_lowered() {
            tracing::warn!(
                min_participants,
                "anchors accept sync aggregates signed by {min_participants} of 512 committee members, below 2/3 ({SUPERMAJORITY_PARTICIPANTS}): an attacker holding that many committee keys and serving the beacon API can anchor a forged block"
            );
        }
        Ok(policy)
    }

    /// The configured minimum.
    pub fn min_participants(self) -> usize {
        self.min_participants
    }

    /// Whether the minimum is below 2/3 of the committee.
    pub fn is_lowered(self) -> bool {
        self.min_participants < SUPERMAJORITY_PARTICIPANTS
    }

    /// Signers required given the store's safety threshold: the configured minimum, but at
    /// least one more than the threshold (the specs move the optimistic header only on
    /// `participants > get_safety_threshold(store)`).
    pub fn required(self, safety_threshold: usize) -> usize {
        self.min_participants
            .max(safety_threshold.saturating_add(1))
    }

    /// Whether an aggregate with `participants` signers may anchor (`field` names it in the
    /// error), and the trust it gives: [`Trust::Supermajority`] from 2/3 on, else
    /// [`Trust::Signed`].
    pub fn check(
        self,
        participants: usize,
        safety_threshold: usize,
        field: &'static str,
    ) -> Result<Trust, LightError> {
        let required = self.required(safety_threshold);
        if participants < required {
            return Err(LightError::Participation {
                participants,
                required,
                field,
            });
        }
        Ok(if is_supermajority(participants) {
            Trust::Supermajority
        } else {
            Trust::Signed
        })
    }
}

/// `participants * 3 >= 512 * 2`: the supermajority the specs require to finalize.
pub fn is_supermajority(participants: usize) -> bool {
    participants >= SUPERMAJORITY_PARTICIPANTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supermajority_is_342_of_512() {
        assert_eq!(SUPERMAJORITY_PARTICIPANTS, 342);
        assert!(!is_supermajority(341) && is_supermajority(342));
        assert_eq!(ParticipationPolicy::default().min_participants(), 342);
    }

    #[test]
    fn the_requirement_never_falls_below_the_safety_threshold_or_one() {
        let lowered = ParticipationPolicy::new(100).unwrap();
        assert!(lowered.is_lowered());
        assert_eq!(lowered.required(0), 100);
        assert_eq!(lowered.required(256), 257);
        assert_eq!(ParticipationPolicy::new(1).unwrap().required(0), 1);
        assert!(ParticipationPolicy::new(0).is_err());
        assert!(ParticipationPolicy::new(513).is_err());
        assert_eq!(lowered.check(100, 0, "x").unwrap(), Trust::Signed);
        assert!(matches!(
            lowered.check(100, 256, "x"),
            Err(LightError::Participation {
                participants: 100,
                required: 257,
                field: "x"
            })
        ));
        assert_eq!(
            ParticipationPolicy::SUPERMAJORITY
                .check(342, 256, "x")
                .unwrap(),
            Trust::Supermajority
        );
    }
}
