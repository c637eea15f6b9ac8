//! A chain's blob schedule: which blob parameters (EIP-4844, EIP-7691, EIP-7892 BPO forks)
//! apply from which block timestamp. It turns a verified header's excess blob gas into the
//! blob base fee of receipts' `blobGasPrice` and of `BLOBBASEFEE` in `eth_call`; without an
//! entry for a block's time neither is answered.
//!
//! Not here: anything read from an upstream.

use alloy_eips::eip7840::BlobParams;

/// Mainnet's activation times: Cancun, Prague, Osaka, BPO1, BPO2.
const MAINNET: [u64; 5] = [
    1_710_338_135,
    1_746_612_311,
    1_764_798_551,
    1_765_290_071,
    1_767_747_671,
];

/// Blob parameters by activation timestamp.
#[derive(Debug, Clone, Default)]
pub struct BlobSchedule(Vec<(u64, BlobParams)>);

impl BlobSchedule {
    /// A schedule from `(activation timestamp, parameters)` entries.
    pub fn new(mut entries: Vec<(u64, BlobParams)>) -> BlobSchedule {
        entries.sort_by_key(|(time, _)| *time);
        BlobSchedule(entries)
    }

    /// Mainnet's schedule (Cancun, Prague, Osaka, BPO1, BPO2).
    pub fn mainnet() -> BlobSchedule {
        let params = [
            BlobParams::cancun(),
            BlobParams::prague(),
            BlobParams::osaka(),
            BlobParams::bpo1(),
            BlobParams::bpo2(),
        ];
        BlobSchedule::new(MAINNET.into_iter().zip(params).collect())
    }

    /// The known schedule of `chain_id` (mainnet), else an empty one.
    pub fn for_chain(chain_id: u64) -> BlobSchedule {
        if chain_id == 1 {
            BlobSchedule::mainnet()
        } else {
            BlobSchedule::default()
        }
    }

    /// The parameters in force at `timestamp`.
    pub fn at(&self, timestamp: u64) -> Option<&BlobParams> {
        self.0
            .iter()
            .rev()
            .find(|(time, _)| *time <= timestamp)
            .map(|(_, p)| p)
    }

    /// The blob base fee of a block at `timestamp` with `excess_blob_gas`.
    pub fn blob_fee(&self, timestamp: u64, excess_blob_gas: Option<u64>) -> Option<u128> {
        Some(self.at(timestamp)?.calc_blob_fee(excess_blob_gas?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mainnet_parameters_by_time() {
        let s = BlobSchedule::mainnet();
        assert!(s.at(1_710_338_134).is_none());
        assert_eq!(s.at(1_710_338_135).unwrap().update_fraction, 3_338_477);
        assert_eq!(s.at(1_746_612_311).unwrap().update_fraction, 5_007_716);
        assert_eq!(s.at(1_765_290_071).unwrap().max_blob_count, 15);
        assert_eq!(s.at(u64::MAX).unwrap().max_blob_count, 21);
        assert_eq!(s.blob_fee(1_710_338_135, Some(0)), Some(1));
        assert!(BlobSchedule::for_chain(17000).at(u64::MAX).is_none());
    }
}
