//! A chain's fork schedule by block timestamp — the one table both verifiers use: which EVM
//! revision (Shanghai, Cancun, Prague, Osaka) runs a block's `eth_call`, and which blob
//! parameters (EIP-4844, EIP-7691, EIP-7892 BPO forks) give its blob base fee (receipts'
//! `blobGasPrice`, `BLOBBASEFEE`). Known chains (mainnet, sepolia, hoodi) are built in, with
//! geth's `params/config.go` values; another chain's schedule follows from its consensus
//! fork epochs (Capella → Shanghai, Deneb → Cancun, Electra → Prague, Fulu → Osaka) with the
//! BPO forks given by the caller ([`parse_bpo`]). Without an entry for a block's time neither
//! is answered from the table.
//!
//! Not here: anything read from an upstream; the EVM run itself (`evm`); the consensus
//! fork epochs (`sszgate-light`'s `ChainSpec::execution_fork_times` gives their times).

use alloy_eips::eip7840::BlobParams;
use revm_primitives::hardfork::SpecId;

/// Activation times of a known chain: Shanghai, Cancun, Prague, Osaka, BPO1, BPO2.
struct KnownTimes([u64; 6]);

/// geth `params/config.go`, `MainnetChainConfig`.
const MAINNET: KnownTimes = KnownTimes([
    1_681_338_455,
    1_710_338_135,
    1_746_612_311,
    1_764_798_551,
    1_765_290_071,
    1_767_747_671,
]);
/// geth `params/config.go`, `SepoliaChainConfig`.
const SEPOLIA: KnownTimes = KnownTimes([
    1_677_557_088,
    1_706_655_072,
    1_741_159_776,
    1_760_427_360,
    1_761_017_184,
    1_761_607_008,
]);
/// geth `params/config.go`, `HoodiChainConfig` (Shanghai and Cancun at genesis).
const HOODI: KnownTimes = KnownTimes([
    0,
    0,
    1_742_999_832,
    1_761_677_592,
    1_762_365_720,
    1_762_955_544,
]);

/// EVM revisions and blob parameters by activation timestamp.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForkSchedule {
    revisions: Vec<(u64, SpecId)>,
    blobs: Vec<(u64, BlobParams)>,
}

impl ForkSchedule {
    /// A schedule from `(activation timestamp, revision)` and `(activation timestamp, blob
    /// parameters)` entries, in any order.
    pub fn new(
        mut revisions: Vec<(u64, SpecId)>,
        mut blobs: Vec<(u64, BlobParams)>,
    ) -> ForkSchedule {
        revisions.sort_by_key(|(time, _)| *time);
        blobs.sort_by_key(|(time, _)| *time);
        ForkSchedule { revisions, blobs }
    }

    fn known(t: &KnownTimes) -> ForkSchedule {
        let [shanghai, cancun, prague, osaka, bpo1, bpo2] = t.0;
        ForkSchedule::new(
            vec![
                (shanghai, SpecId::SHANGHAI),
                (cancun, SpecId::CANCUN),
                (prague, SpecId::PRAGUE),
                (osaka, SpecId::OSAKA),
            ],
            vec![
                (cancun, BlobParams::cancun()),
                (prague, BlobParams::prague()),
                (osaka, BlobParams::osaka()),
                (bpo1, BlobParams::bpo1()),
                (bpo2, BlobParams::bpo2()),
            ],
        )
    }

    /// Mainnet's schedule.
    pub fn mainnet() -> ForkSchedule {
        ForkSchedule::known(&MAINNET)
    }

    /// The known schedule of `chain_id` (mainnet, sepolia, hoodi), else an empty one.
    pub fn for_chain(chain_id: u64) -> ForkSchedule {
        match chain_id {
            1 => ForkSchedule::known(&MAINNET),
            11_155_111 => ForkSchedule::known(&SEPOLIA),
            560_048 => ForkSchedule::known(&HOODI),
            _ => ForkSchedule::default(),
        }
    }

    /// Whether `chain_id` has a built-in schedule.
    pub fn is_known(chain_id: u64) -> bool {
        ForkSchedule::for_chain(chain_id) != ForkSchedule::default()
    }

    /// The schedule a chain's consensus forks imply, given when Capella, Deneb, Electra and
    /// Fulu begin (Unix seconds, `None` when not scheduled): Capella → Shanghai, Deneb →
    /// Cancun, Electra → Prague, Fulu → Osaka, each with its EIP's blob parameters. BPO forks
    /// are added with [`ForkSchedule::with_bpo`].
    pub fn from_consensus(fork_times: [Option<u64>; 4]) -> ForkSchedule {
        let forks = [
            (SpecId::SHANGHAI, None),
            (SpecId::CANCUN, Some(BlobParams::cancun())),
            (SpecId::PRAGUE, Some(BlobParams::prague())),
            (SpecId::OSAKA, Some(BlobParams::osaka())),
        ];
        let (mut revisions, mut blobs) = (Vec::new(), Vec::new());
        for (at, (revision, params)) in fork_times.into_iter().zip(forks) {
            let Some(at) = at else { continue };
            revisions.push((at, revision));
            blobs.extend(params.map(|p| (at, p)));
        }
        ForkSchedule::new(revisions, blobs)
    }

    /// The known schedule of `chain_id`, else the one its consensus forks imply
    /// ([`ForkSchedule::from_consensus`]).
    pub fn for_chain_or_consensus(chain_id: u64, fork_times: [Option<u64>; 4]) -> ForkSchedule {
        match ForkSchedule::is_known(chain_id) {
            true => ForkSchedule::for_chain(chain_id),
            false => ForkSchedule::from_consensus(fork_times),
        }
    }

    /// Adds blob-parameter-only forks (EIP-7892): `(activation timestamp, parameters)`. A BPO
    /// fork follows Osaka: one timed before it (geth's `bpo1Time: 0` on a chain with Osaka at
    /// genesis) takes effect with Osaka, after Osaka's own parameters.
    pub fn with_bpo(mut self, entries: Vec<(u64, BlobParams)>) -> ForkSchedule {
        let osaka = self
            .revisions
            .iter()
            .find(|(_, spec)| *spec == SpecId::OSAKA)
            .map_or(0, |(time, _)| *time);
        // Stable sort: at equal times the BPO entries stay after the fork's own.
        self.blobs
            .extend(entries.into_iter().map(|(time, p)| (time.max(osaka), p)));
        ForkSchedule::new(self.revisions, self.blobs)
    }

    /// The EVM revision in force at `timestamp`, if the table has one.
    pub fn revision_at(&self, timestamp: u64) -> Option<SpecId> {
        latest_at(&self.revisions, timestamp).copied()
    }

    /// The blob parameters in force at `timestamp`.
    pub fn at(&self, timestamp: u64) -> Option<&BlobParams> {
        latest_at(&self.blobs, timestamp)
    }

    /// The blob base fee of a block at `timestamp` with `excess_blob_gas`.
    pub fn blob_fee(&self, timestamp: u64, excess_blob_gas: Option<u64>) -> Option<u128> {
        Some(self.at(timestamp)?.calc_blob_fee(excess_blob_gas?))
    }
}

fn latest_at<T>(entries: &[(u64, T)], timestamp: u64) -> Option<&T> {
    entries
        .iter()
        .rev()
        .find(|(time, _)| *time <= timestamp)
        .map(|(_, v)| v)
}

/// Blob-parameter-only forks (EIP-7892) as given by a caller: `(activation timestamp,
/// parameters)`; written `TIME:TARGET:MAX:FRACTION,…` ([`parse_bpo`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BpoForks(pub Vec<(u64, BlobParams)>);

impl std::str::FromStr for BpoForks {
    type Err = String;

    fn from_str(text: &str) -> Result<BpoForks, String> {
        parse_bpo(text).map(BpoForks)
    }
}

/// Parses BPO forks written `TIME:TARGET:MAX:FRACTION,…` (Unix activation time, target and
/// maximum blobs per block, base-fee update fraction), e.g. `0:48:72:5007716`.
pub fn parse_bpo(text: &str) -> Result<Vec<(u64, BlobParams)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .enumerate()
        .map(|(i, entry)| {
            let bad = |why: &str| format!("blob schedule entry {i} `{entry}`: {why}");
            let numbers: Vec<u64> = entry
                .split(':')
                .map(|n| n.parse::<u64>().map_err(|_| bad("not a number")))
                .collect::<Result<_, _>>()?;
            let [time, target, max, fraction] = numbers[..] else {
                return Err(bad("TIME:TARGET:MAX:FRACTION expected"));
            };
            if target > max || max == 0 || fraction == 0 {
                return Err(bad("0 < TARGET <= MAX and FRACTION > 0 expected"));
            }
            let params = BlobParams {
                target_blob_count: target,
                max_blob_count: max,
                update_fraction: u128::from(fraction),
                ..BlobParams::osaka()
            };
            Ok((time, params))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use sszgate_light::ChainSpec;

    use super::*;

    #[test]
    fn mainnet_parameters_by_time() {
        let s = ForkSchedule::mainnet();
        assert!(s.at(1_710_338_134).is_none());
        assert_eq!(s.at(1_710_338_135).unwrap().update_fraction, 3_338_477);
        assert_eq!(s.at(1_746_612_311).unwrap().update_fraction, 5_007_716);
        let bpo1 = s.at(1_765_290_071).unwrap();
        assert_eq!((bpo1.target_blob_count, bpo1.max_blob_count), (10, 15));
        assert_eq!(bpo1.update_fraction, 8_346_193);
        let bpo2 = s.at(u64::MAX).unwrap();
        assert_eq!((bpo2.target_blob_count, bpo2.max_blob_count), (14, 21));
        assert_eq!(bpo2.update_fraction, 11_684_671);
        assert_eq!(s.blob_fee(1_710_338_135, Some(0)), Some(1));
        assert!(ForkSchedule::for_chain(17000).at(u64::MAX).is_none());
    }

    #[test]
    fn revisions_by_time_on_known_chains() {
        let s = ForkSchedule::mainnet();
        assert_eq!(s.revision_at(1_746_612_310), Some(SpecId::CANCUN));
        assert_eq!(s.revision_at(1_746_612_311), Some(SpecId::PRAGUE));
        assert_eq!(s.revision_at(1_764_798_550), Some(SpecId::PRAGUE));
        assert_eq!(s.revision_at(1_764_798_551), Some(SpecId::OSAKA));
        assert_eq!(s.revision_at(1_681_338_454), None);
        let sepolia = ForkSchedule::for_chain(11_155_111);
        assert_eq!(sepolia.revision_at(1_760_427_360), Some(SpecId::OSAKA));
        assert_eq!(sepolia.at(1_761_607_008).unwrap().max_blob_count, 21);
        let hoodi = ForkSchedule::for_chain(560_048);
        assert_eq!(hoodi.revision_at(0), Some(SpecId::CANCUN));
        assert_eq!(hoodi.at(1_762_365_720).unwrap().max_blob_count, 15);
        assert!(ForkSchedule::is_known(1) && !ForkSchedule::is_known(1337));
    }

    #[test]
    fn mainnets_consensus_fork_epochs_give_its_execution_fork_times() {
        // Two independent sources of the same times: the beacon fork epochs and geth's table.
        let derived = ForkSchedule::from_consensus(ChainSpec::mainnet().execution_fork_times());
        for time in [1_681_338_455, 1_710_338_135, 1_746_612_311, 1_764_798_551] {
            let table = ForkSchedule::mainnet();
            assert_eq!(derived.revision_at(time), table.revision_at(time), "{time}");
            assert_eq!(
                derived.revision_at(time - 1),
                table.revision_at(time - 1),
                "{time}"
            );
        }
    }

    #[test]
    fn a_custom_chain_follows_its_consensus_forks_and_given_bpo() {
        // The devnet: every fork at genesis (epoch 0), BPO1 at time 0 with 48/72.
        let mut spec = ChainSpec::mainnet();
        spec.genesis_time = 1_000;
        for (i, fork) in spec.forks.iter_mut().enumerate() {
            fork.1 = if i <= 5 { 0 } else { u64::MAX };
        }
        let s = ForkSchedule::for_chain_or_consensus(1337, spec.execution_fork_times())
            .with_bpo(parse_bpo("0:48:72:5007716").unwrap());
        assert_eq!(s.revision_at(1_000), Some(SpecId::OSAKA));
        let p = s.at(1_000).unwrap();
        assert_eq!(
            (p.target_blob_count, p.max_blob_count, p.update_fraction),
            (48, 72, 5_007_716)
        );
        // Electra at epoch 10: Cancun before its first slot's time, Prague from it.
        spec.forks[4].1 = 10;
        spec.forks[5].1 = u64::MAX;
        let s = ForkSchedule::from_consensus(spec.execution_fork_times());
        let electra = 1_000 + 10 * 32 * 12;
        assert_eq!(s.revision_at(electra - 1), Some(SpecId::CANCUN));
        assert_eq!(s.revision_at(electra), Some(SpecId::PRAGUE));
        assert_eq!(s.revision_at(u64::MAX), Some(SpecId::PRAGUE));
    }

    #[test]
    fn a_bad_blob_schedule_names_the_entry() {
        let two = parse_bpo("0:48:72:5007716, 100:60:90:1").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].0, 100);
        for (text, says) in [
            ("0:48:72", "TIME:TARGET:MAX:FRACTION"),
            ("0:x:72:1", "not a number"),
            ("0:80:72:1", "TARGET <= MAX"),
            ("0:1:2:1,5:1:2", "entry 1"),
        ] {
            let e = parse_bpo(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
