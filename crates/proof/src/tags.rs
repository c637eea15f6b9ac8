//! What a block tag may mean to the proof verifier, and the one place that decides it.
//!
//! A proof binds a block by its beacon header's slot, not by what a tag named. So a tag is
//! answered only when the proven header is what the tag says by what the verifier itself
//! knows: `latest` is a header at most [`Freshness::max_head_age`] slots behind the verifier's
//! clock and not ahead of it (beyond [`CLOCK_DISPARITY_SLOTS`]); `safe` and `finalized` a
//! header at or before a finalized header the verifier took from verified sync data (a
//! bootstrap's checkpoint or a finality update); `earliest` and `pending` are refused. Range
//! bounds of eth_getLogs follow the same rules: every proven block within them for colibri's
//! `LogsProof` ([`check_from`], [`check_to`]); the first and last block of a `LogsRangeProof`
//! exactly the bounds ([`check_range_start`], [`check_range_end`]).
//!
//! What does not live here: parsing the tags (`params`), the signatures (`header`, `trust`).

use crate::error::{Check, ProofError, fail};
use crate::params::BlockArg;
use crate::trust::TrustedState;
use crate::types::ProofUnion;

/// Slots a proven header may be ahead of the verifier's clock (the consensus specs'
/// `MAXIMUM_GOSSIP_CLOCK_DISPARITY` rounded up to a slot).
pub const CLOCK_DISPARITY_SLOTS: u64 = 1;

/// The default of `--max-head-age`: how many slots `latest` may be behind the clock.
pub const DEFAULT_MAX_HEAD_AGE: u64 = 3;

/// The verifier's clock in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// A fixed time, for replaying a recorded chain.
    Fixed(u64),
}

impl Clock {
    /// Now, in Unix seconds.
    pub fn now(self) -> u64 {
        match self {
            Clock::System => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            Clock::Fixed(at) => at,
        }
    }
}

/// How fresh `latest` must be, by which clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    /// The clock.
    pub clock: Clock,
    /// Slots `latest` may be behind the clock's slot.
    pub max_head_age: u64,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness {
            clock: Clock::System,
            max_head_age: DEFAULT_MAX_HEAD_AGE,
        }
    }
}

/// A finalized beacon header the verifier knows from verified sync data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finalized {
    /// Its beacon slot.
    pub slot: u64,
    /// Its execution block number.
    pub block_number: u64,
}

/// The proven block a tag or bound is checked against.
#[derive(Debug, Clone, Copy)]
pub struct ProvenBlock {
    /// The beacon slot of its header.
    pub slot: u64,
    /// Its execution block number, when the proof binds it.
    pub number: Option<u64>,
}

fn refused(check: Check, tag: &str, detail: String) -> ProofError {
    ProofError::Check {
        check,
        detail: format!("\"{tag}\": {detail}"),
    }
}

/// `latest`: the header at most `max_head_age` slots behind the clock, not ahead of it.
fn check_latest(trust: &TrustedState, slot: u64) -> Result<(), ProofError> {
    check_not_ahead(trust, "latest", slot)?;
    let Freshness {
        clock,
        max_head_age,
    } = trust.freshness;
    let now = trust.spec.slot_at(clock.now());
    if slot.saturating_add(max_head_age) < now {
        return Err(refused(
            Check::Tag,
            "latest",
            format!(
                "the proven header is at slot {slot}, {} slots behind the clock's slot {now} (at most {max_head_age} allowed)",
                now - slot
            ),
        ));
    }
    Ok(())
}

/// No proven header may be ahead of the clock by more than the disparity.
fn check_not_ahead(trust: &TrustedState, tag: &str, slot: u64) -> Result<(), ProofError> {
    let now = trust.spec.slot_at(trust.freshness.clock.now());
    if slot > now.saturating_add(CLOCK_DISPARITY_SLOTS) {
        return Err(refused(
            Check::Tag,
            tag,
            format!("the proven header's slot {slot} is ahead of the clock's slot {now}"),
        ));
    }
    Ok(())
}

/// The finalized header held, or why `tag` cannot be proven.
fn held_finalized(trust: &TrustedState, tag: &str) -> Result<Finalized, ProofError> {
    trust.finalized().ok_or_else(|| {
        ProofError::Unprovable(format!(
            "\"{tag}\": this verifier holds no finalized header from sync data to check it against"
        ))
    })
}

/// `safe`/`finalized`: the block at or before the finalized header held.
fn check_finalized(trust: &TrustedState, tag: &str, block: ProvenBlock) -> Result<(), ProofError> {
    let held = held_finalized(trust, tag)?;
    let after = block.slot > held.slot || block.number.is_some_and(|n| n > held.block_number);
    if after {
        return Err(ProofError::Unprovable(format!(
            "\"{tag}\": the proven header (slot {}) is after the newest finalized header this verifier holds (slot {}, block {})",
            block.slot, held.slot, held.block_number
        )));
    }
    Ok(())
}

/// Checks that the proven block is what `tag` names (see the module comment).
pub fn check_tag(trust: &TrustedState, tag: &str, block: ProvenBlock) -> Result<(), ProofError> {
    match tag {
        "latest" => check_latest(trust, block.slot),
        "safe" | "finalized" => check_finalized(trust, tag, block),
        _ => Err(ProofError::Unprovable(format!(
            "\"{tag}\": no proof of this format shows which block it names"
        ))),
    }
}

/// Checks a block argument against a proven block: a hash or number must be the proven one
/// (`hash`, `number`: `None` when the proof does not bind it), a tag must hold by [`check_tag`].
pub fn check_block(
    trust: &TrustedState,
    arg: &BlockArg,
    block: ProvenBlock,
    hash: Option<alloy_primitives::B256>,
) -> Result<(), ProofError> {
    let mismatch = |what: &str, proven: String, asked: String| {
        fail(
            Check::Request,
            format!("{what}: the proof is for {proven}, {asked} was asked for"),
        )
    };
    match arg {
        BlockArg::Tag(tag) => check_tag(trust, tag, block),
        BlockArg::Hash(h) => match hash {
            Some(p) if p == *h => Ok(()),
            p => mismatch("blockHash", format!("{p:?}"), h.to_string()),
        },
        BlockArg::Number(n) => match block.number {
            Some(p) if p == *n => Ok(()),
            p => mismatch("blockNumber", format!("{p:?}"), n.to_string()),
        },
    }
}

/// A proven block at or after the range's start (`fromBlock`). `earliest` is block 0;
/// `latest` needs a fresh header; `safe`/`finalized` cannot be shown (the verifier knows only
/// a finalized header at or before the chain's).
pub fn check_from(
    trust: &TrustedState,
    from: &BlockArg,
    block: ProvenBlock,
) -> Result<(), ProofError> {
    let number = block.number.unwrap_or(0);
    match from {
        BlockArg::Number(n) if number < *n => fail(
            Check::Request,
            format!("block {number} is before fromBlock {n}"),
        ),
        BlockArg::Number(_) => Ok(()),
        BlockArg::Tag(t) if t == "earliest" => Ok(()),
        BlockArg::Tag(t) if t == "latest" => check_latest(trust, block.slot),
        BlockArg::Tag(t) => Err(ProofError::Unprovable(format!(
            "fromBlock \"{t}\": no proof of this format shows that a block is at or after it"
        ))),
        BlockArg::Hash(_) => Err(ProofError::Params("fromBlock: not a block hash".into())),
    }
}

/// A proven block at or before the range's end (`toBlock`). `latest` holds for any signed
/// header not ahead of the clock; `safe`/`finalized` need a finalized header held at or after
/// it; `earliest` is block 0.
pub fn check_to(trust: &TrustedState, to: &BlockArg, block: ProvenBlock) -> Result<(), ProofError> {
    let number = block.number.unwrap_or(u64::MAX);
    match to {
        BlockArg::Number(n) if number > *n => fail(
            Check::Request,
            format!("block {number} is after toBlock {n}"),
        ),
        BlockArg::Number(_) => Ok(()),
        BlockArg::Tag(t) if t == "earliest" => check_to(trust, &BlockArg::Number(0), block),
        BlockArg::Tag(t) if t == "latest" => check_not_ahead(trust, "latest", block.slot),
        BlockArg::Tag(t) if t == "safe" || t == "finalized" => check_finalized(trust, t, block),
        BlockArg::Tag(t) => Err(ProofError::Unprovable(format!(
            "toBlock \"{t}\": no proof of this format shows which block it names"
        ))),
        BlockArg::Hash(_) => Err(ProofError::Params("toBlock: not a block hash".into())),
    }
}

/// A bound of an eth_getLogs range that must be exactly the proven block `number`.
fn exact_bound(bound: &str, asked: u64, number: Option<u64>) -> Result<(), ProofError> {
    match number {
        Some(n) if n == asked => Ok(()),
        n => fail(
            Check::Completeness,
            format!(
                "the proven range's {bound} block is {n:?}, {bound}Block {asked} was asked for"
            ),
        ),
    }
}

/// The first block of a proven eth_getLogs range (a `LogsRangeProof`) against `fromBlock`:
/// a number or `earliest` (block 0) must be it exactly, so no block before it is left out;
/// `latest` must be fresh and the range that one block (`single`); `safe`, `finalized` and
/// `pending` cannot be shown.
pub fn check_range_start(
    trust: &TrustedState,
    from: &BlockArg,
    first: ProvenBlock,
    single: bool,
) -> Result<(), ProofError> {
    match from {
        BlockArg::Number(n) => exact_bound("from", *n, first.number),
        BlockArg::Tag(t) if t == "earliest" => exact_bound("from", 0, first.number),
        BlockArg::Tag(t) if t == "latest" && !single => fail(
            Check::Completeness,
            "fromBlock \"latest\": the range must be the one latest block".to_string(),
        ),
        BlockArg::Tag(t) if t == "latest" => check_latest(trust, first.slot),
        _ => check_from(trust, from, first),
    }
}

/// The last block of a proven eth_getLogs range against `toBlock`: a number or `earliest`
/// must be it exactly; `latest` must be fresh by the clock ([`Freshness::max_head_age`]: a
/// range may end at most that many slots before the clock's, never earlier); `safe` and
/// `finalized` at or before the finalized header held (a range to `finalized` is final, not
/// necessarily up to the newest finalized block); `pending` cannot be shown.
pub fn check_range_end(
    trust: &TrustedState,
    to: &BlockArg,
    last: ProvenBlock,
) -> Result<(), ProofError> {
    match to {
        BlockArg::Number(n) => exact_bound("to", *n, last.number),
        BlockArg::Tag(t) if t == "earliest" => exact_bound("to", 0, last.number),
        BlockArg::Tag(t) if t == "latest" => check_latest(trust, last.slot),
        _ => check_to(trust, to, last),
    }
}

/// The clock a recorded proof is replayed at: the start of the slot after the newest data
/// header it names (when it was fresh); `None` for a proof that names no header.
pub fn replay_clock(spec: &sszgate_light::ChainSpec, proof: &ProofUnion) -> Option<Clock> {
    let slot = match proof {
        ProofUnion::Account(p) => p.state_proof.header.slot,
        ProofUnion::Call(p) => p.state_proof.header.slot,
        ProofUnion::Transaction(p) => p.header.slot,
        ProofUnion::Receipt(p) => p.header.slot,
        ProofUnion::Block(p) => p.header.slot,
        ProofUnion::BlockNumber(p) => p.header.slot,
        ProofUnion::Logs(blocks) => blocks.iter().map(|b| b.header.slot).max()?,
        ProofUnion::LogsRange(p) => p.blocks.last()?.header.slot,
        ProofUnion::None | ProofUnion::Sync(_) | ProofUnion::Witness(_) => return None,
    };
    let seconds = slot.checked_add(1)?.checked_mul(spec.seconds_per_slot)?;
    Some(Clock::Fixed(spec.genesis_time.checked_add(seconds)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sszgate_light::ChainSpec;
    use sszgate_light::types::LightClientHeader;

    /// A mainnet trust whose clock is at the start of `slot`.
    fn trust_at(slot: u64) -> TrustedState {
        let mut trust = TrustedState::new(ChainSpec::mainnet());
        let spec = &trust.spec;
        trust.freshness.clock = Clock::Fixed(spec.genesis_time + slot * spec.seconds_per_slot);
        trust
    }

    fn at(slot: u64, number: u64) -> ProvenBlock {
        ProvenBlock {
            slot,
            number: Some(number),
        }
    }

    fn is_tag_check(r: Result<(), ProofError>) -> bool {
        matches!(
            r,
            Err(ProofError::Check {
                check: Check::Tag,
                ..
            })
        )
    }

    #[test]
    fn latest_is_at_most_max_head_age_behind_and_not_ahead() {
        let trust = trust_at(1000);
        assert!(check_tag(&trust, "latest", at(1000 - DEFAULT_MAX_HEAD_AGE, 1)).is_ok());
        assert!(is_tag_check(check_tag(&trust, "latest", at(996, 1))));
        assert!(check_tag(&trust, "latest", at(1001, 1)).is_ok());
        assert!(is_tag_check(check_tag(&trust, "latest", at(1002, 1))));
        let mut relaxed = trust_at(1000);
        relaxed.freshness.max_head_age = 10;
        assert!(check_tag(&relaxed, "latest", at(990, 1)).is_ok());
        // toBlock "latest": any header not ahead of the clock; fromBlock "latest": fresh.
        let latest = BlockArg::Tag("latest".into());
        assert!(check_to(&trust, &latest, at(10, 1)).is_ok());
        assert!(is_tag_check(check_to(&trust, &latest, at(1002, 1))));
        assert!(is_tag_check(check_from(&trust, &latest, at(10, 1))));
    }

    #[test]
    fn finalized_needs_a_finalized_header_held_at_or_after_the_block() {
        let mut trust = trust_at(1000);
        let unprovable = |r: Result<(), ProofError>| matches!(r, Err(ProofError::Unprovable(w)) if w.contains("finalized"));
        assert!(unprovable(check_tag(&trust, "finalized", at(10, 1))));
        let mut header = LightClientHeader::default();
        header.beacon.slot = 900;
        header.execution.block_number = 800;
        trust.learn_finalized(&header);
        assert_eq!(
            trust.finalized(),
            Some(Finalized {
                slot: 900,
                block_number: 800
            })
        );
        // An older finalized header does not replace a newer one.
        header.beacon.slot = 10;
        trust.learn_finalized(&header);
        assert_eq!(trust.finalized().map(|f| f.slot), Some(900));
        for tag in ["finalized", "safe"] {
            assert!(check_tag(&trust, tag, at(900, 800)).is_ok());
            assert!(check_tag(&trust, tag, at(500, 400)).is_ok());
            assert!(
                check_tag(
                    &trust,
                    tag,
                    ProvenBlock {
                        slot: 500,
                        number: None
                    }
                )
                .is_ok()
            );
            assert!(check_tag(&trust, tag, at(901, 800)).is_err());
            assert!(check_tag(&trust, tag, at(900, 801)).is_err());
        }
        let finalized = BlockArg::Tag("finalized".into());
        assert!(check_to(&trust, &finalized, at(800, 700)).is_ok());
        assert!(check_to(&trust, &finalized, at(901, 801)).is_err());
        assert!(matches!(
            check_from(&trust, &finalized, at(800, 700)),
            Err(ProofError::Unprovable(_))
        ));
    }

    #[test]
    fn earliest_and_pending_are_unprovable_as_block_tags() {
        let trust = trust_at(1000);
        for tag in ["earliest", "pending"] {
            assert!(matches!(
                check_tag(&trust, tag, at(1000, 1)),
                Err(ProofError::Unprovable(w)) if w.contains(tag)
            ));
        }
        // As range bounds, earliest is block 0.
        let earliest = BlockArg::Tag("earliest".into());
        assert!(check_from(&trust, &earliest, at(5, 5)).is_ok());
        assert!(check_to(&trust, &earliest, at(0, 0)).is_ok());
        assert!(check_to(&trust, &earliest, at(5, 5)).is_err());
    }

    #[test]
    fn numbers_and_hashes_must_be_the_proven_ones() {
        let trust = trust_at(1000);
        let hash = alloy_primitives::B256::repeat_byte(7);
        let ok = check_block(&trust, &BlockArg::Number(5), at(1, 5), Some(hash));
        assert!(ok.is_ok());
        assert!(check_block(&trust, &BlockArg::Number(6), at(1, 5), Some(hash)).is_err());
        assert!(check_block(&trust, &BlockArg::Hash(hash), at(1, 5), Some(hash)).is_ok());
        let other = alloy_primitives::B256::repeat_byte(8);
        assert!(check_block(&trust, &BlockArg::Hash(other), at(1, 5), Some(hash)).is_err());
        assert!(check_block(&trust, &BlockArg::Hash(hash), at(1, 5), None).is_err());
        let (from, to) = (BlockArg::Number(5), BlockArg::Number(6));
        assert!(check_from(&trust, &from, at(1, 4)).is_err());
        assert!(check_to(&trust, &to, at(1, 7)).is_err());
        assert!(
            check_from(&trust, &from, at(1, 5)).is_ok() && check_to(&trust, &to, at(1, 6)).is_ok()
        );
    }
}
