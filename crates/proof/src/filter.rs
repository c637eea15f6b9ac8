//! The eth_getLogs filter: parsed with every field checked (a field it cannot check is
//! refused, never ignored), matched against a log, and against a block's logs bloom.
//!
//! What does not live here: what the filter's block range means for a proven block (`tags`),
//! the proofs (`receipts` for colibri's `LogsProof`, `logs` for sszgate's `LogsRangeProof`).

use alloy_primitives::{Address, B256, Bloom, BloomInput};
use serde_json::Value;

use crate::error::ProofError;
use crate::params::{self, BlockArg};

/// Which blocks an eth_getLogs filter names: one by hash, or a range (each bound a number or
/// a tag; absent bounds are `latest`, as nodes read them).
pub enum Blocks {
    /// `blockHash`.
    Hash(B256),
    /// `fromBlock`..=`toBlock`.
    Range {
        /// `fromBlock`.
        from: BlockArg,
        /// `toBlock`.
        to: BlockArg,
    },
}

/// An eth_getLogs filter: every part of it is checked, a part it cannot check is refused.
pub struct Filter {
    /// Addresses a log may come from (empty: any).
    pub addresses: Vec<Address>,
    /// Per topic position: the alternatives (`None`: any; an empty list: any topic there).
    pub topics: Vec<Option<Vec<B256>>>,
    /// The blocks it names.
    pub blocks: Blocks,
}

/// The filter keys nodes accept; any other key is refused rather than ignored.
const FILTER_KEYS: [&str; 5] = ["address", "topics", "fromBlock", "toBlock", "blockHash"];

/// Topic positions a filter may constrain (LOG0 to LOG4).
const MAX_TOPICS: usize = 4;

fn filter_error(detail: String) -> ProofError {
    ProofError::Params(format!("filter: {detail}"))
}

/// A string, or a list of strings, each parsed by `parse`; `None` when absent or null.
fn one_or_many<T: std::str::FromStr>(
    v: Option<&Value>,
    what: &str,
) -> Result<Option<Vec<T>>, ProofError> {
    let one = |x: &Value| {
        x.as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| filter_error(format!("bad {what} {x}")))
    };
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a.iter().map(one).collect::<Result<_, _>>().map(Some),
        Some(x) => one(x).map(|t| Some(vec![t])),
    }
}

impl Filter {
    /// The filter of eth_getLogs `params`; a field it cannot check is refused.
    pub fn parse(params: &Value) -> Result<Filter, ProofError> {
        let f = params::param(params, 0)?
            .as_object()
            .ok_or_else(|| filter_error("not an object".into()))?;
        if let Some(k) = f.keys().find(|k| !FILTER_KEYS.contains(&k.as_str())) {
            return Err(filter_error(format!("{k} is not a filter field")));
        }
        let addresses = one_or_many(f.get("address"), "address")?.unwrap_or_default();
        let topics = match f.get("topics") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.len() <= MAX_TOPICS => a
                .iter()
                .map(|t| one_or_many(Some(t), "topic"))
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(filter_error(format!(
                    "topics: a list of at most {MAX_TOPICS} positions expected"
                )));
            }
        };
        Ok(Filter {
            addresses,
            topics,
            blocks: Self::blocks(f)?,
        })
    }

    fn blocks(f: &serde_json::Map<String, Value>) -> Result<Blocks, ProofError> {
        let field = |k: &str| f.get(k).filter(|v| !v.is_null());
        let bound = |k: &str| match field(k) {
            None => Ok(BlockArg::Tag("latest".into())),
            Some(v) => match params::block_arg(v) {
                Some(b @ (BlockArg::Number(_) | BlockArg::Tag(_))) => Ok(b),
                _ => Err(filter_error(format!("{k}: not a block number or tag"))),
            },
        };
        match field("blockHash") {
            Some(_) if field("fromBlock").is_some() || field("toBlock").is_some() => Err(
                filter_error("blockHash together with fromBlock or toBlock".into()),
            ),
            Some(h) => h
                .as_str()
                .and_then(|s| s.parse().ok())
                .map(Blocks::Hash)
                .ok_or_else(|| filter_error("blockHash: not a 32-byte hash".into())),
            None => match (bound("fromBlock")?, bound("toBlock")?) {
                (BlockArg::Number(a), BlockArg::Number(b)) if a > b => {
                    Err(filter_error(format!("fromBlock {a} is after toBlock {b}")))
                }
                (from, to) => Ok(Blocks::Range { from, to }),
            },
        }
    }

    /// Whether a log's address and topics match.
    pub fn matches(&self, address: &Address, topics: &[B256]) -> bool {
        (self.addresses.is_empty() || self.addresses.contains(address))
            && self.topics.iter().enumerate().all(|(i, t)| match t {
                None => true,
                Some(any) => topics
                    .get(i)
                    .is_some_and(|x| any.is_empty() || any.contains(x)),
            })
    }

    /// Whether a block with `bloom` may hold a matching log: some log at all (a bloom with no
    /// bit set has none), some address of the filter (if it names any), and at every topic
    /// position with alternatives at least one of them. `false` proves that no log of the
    /// block matches: every log's address and topics are in its block's bloom.
    pub fn may_match(&self, bloom: &Bloom) -> bool {
        let holds = |x: &[u8]| bloom.contains_input(BloomInput::Raw(x));
        !bloom.is_zero()
            && (self.addresses.is_empty() || self.addresses.iter().any(|a| holds(a.as_slice())))
            && self.topics.iter().all(|t| match t {
                Some(any) if !any.is_empty() => any.iter().any(|x| holds(x.as_slice())),
                _ => true,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bloom_matches_only_what_it_holds() {
        let (usdt, other): (Address, Address) =
            (Address::repeat_byte(0xda), Address::repeat_byte(1));
        let transfer = B256::repeat_byte(0xdd);
        let mut bloom = Bloom::ZERO;
        bloom.accrue_raw_log(usdt, &[transfer]);
        let filter = |f: Value| Filter::parse(&json!([f])).unwrap();
        assert!(filter(json!({})).may_match(&bloom));
        assert!(!filter(json!({})).may_match(&Bloom::ZERO), "no bit: no log");
        assert!(filter(json!({"address": [other, usdt]})).may_match(&bloom));
        assert!(!filter(json!({"address": other})).may_match(&bloom));
        assert!(filter(json!({"topics": [null, [transfer]]})).may_match(&bloom));
        assert!(filter(json!({"topics": [[]]})).may_match(&bloom));
        assert!(!filter(json!({"topics": [[B256::repeat_byte(2)]]})).may_match(&bloom));
        assert!(
            !filter(
                json!({"address": usdt, "topics": [[B256::repeat_byte(2), B256::repeat_byte(3)]]})
            )
            .may_match(&bloom)
        );
    }
}
