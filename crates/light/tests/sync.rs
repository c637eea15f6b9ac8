//! The sync protocol on recorded mainnet data: every recorded bootstrap checks against its
//! trusted root, and every recorded updates file that a bootstrap reaches verifies (Deneb and
//! Electra).

mod common;

use alloy_primitives::B256;
use sszgate_light::spec::ChainSpec;
use sszgate_light::store::LightClientStore;
use sszgate_light::types::{Bootstrap, Update, split_update_stream};

/// Far enough in the future that every recorded signature slot is in the past.
const NOW_SLOT: u64 = u64::MAX / 2;

fn bootstrap(case: &str) -> LightClientStore {
    let spec = ChainSpec::mainnet();
    let bytes = common::read_prefixed(case, "eth_v1_beacon_light_client_bootstrap_");
    let b = Bootstrap::from_ssz(&spec, &bytes).unwrap();
    let root = b.header.beacon.root();
    LightClientStore::bootstrap(spec, root, &b).unwrap()
}

fn updates(case: &str, name: &str) -> Vec<Update> {
    let spec = ChainSpec::mainnet();
    let bytes = common::read(case, name);
    split_update_stream(&bytes, 128)
        .unwrap()
        .into_iter()
        .map(|item| Update::from_ssz(&spec, item).unwrap())
        .collect()
}

/// Period of the attested header of the first update in a recorded file name.
fn start_period(name: &str) -> u64 {
    let rest = name.split("start_period_").nth(1).unwrap();
    rest.split('_').next().unwrap().parse().unwrap()
}

/// Every recorded updates file, by case and name, with its decoded updates.
fn all_update_files() -> Vec<(String, String, Vec<Update>)> {
    common::files_matching("eth_v1_beacon_light_client_updates_")
        .into_iter()
        .map(|(case, name, _)| {
            let list = updates(&case, &name);
            (case, name, list)
        })
        .collect()
}

/// Each case's bootstrap, then the case's updates from the bootstrap's period on: all verify
/// and are applied, and the store ends with the next period's committee known.
#[test]
fn each_case_bootstrap_then_its_updates() {
    let spec = ChainSpec::mainnet();
    let mut applied = 0;
    for (case, name, list) in all_update_files() {
        let bytes = common::read_prefixed(&case, "eth_v1_beacon_light_client_bootstrap_");
        if bytes.starts_with(b"{") {
            continue; // the recorded 404 of eth_getTransactionByHash_electra
        }
        let mut store = bootstrap(&case);
        if start_period(&name) < store.finalized_period() {
            continue; // older than the checkpoint: verified by the long chain below
        }
        for update in &list {
            let outcome = store
                .process_update(update, NOW_SLOT)
                .unwrap_or_else(|e| panic!("{case}/{name}: {e}"));
            assert!(outcome.applied, "{case}/{name}: not applied");
            applied += 1;
        }
        assert!(store.next_sync_committee().is_some(), "{case}/{name}");
        assert_eq!(
            spec.period(store.finalized_header.beacon.slot),
            start_period(&name) + list.len() as u64 - 1
        );
    }
    assert!(applied >= 20, "only {applied} updates applied");
}

/// colibri's stored keys of `period` in compressed form (512 × 48 bytes), from any case.
fn colibri_compressed_keys(period: u64) -> Option<Vec<u8>> {
    common::files_matching(&format!("sync_1_{period}"))
        .into_iter()
        .map(|(_, _, bytes)| bytes)
        .find(|bytes| bytes.len() == 512 * 48)
}

/// The long chain: eth_getBalance1's bootstrap (period 1347) and its 46 updates, then
/// trusted_block1's 14 (periods 1393 to 1406): every step verifies, and every other recorded
/// update file in that span verifies against the store when the store is at its period. The
/// chain ends at the committee trusted_block1's own bootstrap (period 1407) carries.
#[test]
fn long_chain_verifies_every_deneb_update_file() {
    let mut store = bootstrap("eth_getBalance1");
    assert_eq!(store.finalized_period(), 1347);
    let files = all_update_files();
    let chain: Vec<Update> = updates(
        "eth_getBalance1",
        "eth_v1_beacon_light_client_updates_start_period_1347_count_46.ssz",
    )
    .into_iter()
    .chain(updates(
        "trusted_block1",
        "eth_v1_beacon_light_client_updates_start_period_1393_count_14.ssz",
    ))
    .collect();
    let mut side_checked = 0;
    let mut colibri_checked = std::collections::BTreeSet::new();
    for update in &chain {
        let period = store.finalized_period();
        if let Some(keys) = colibri_compressed_keys(period) {
            let ours: Vec<u8> = store
                .current_sync_committee()
                .pubkeys
                .iter()
                .flat_map(|k| k.0)
                .collect();
            assert_eq!(
                ours, keys,
                "period {period}: our committee and colibri's stored keys"
            );
            colibri_checked.insert(period);
        }
        for (case, name, list) in &files {
            if start_period(name) == period && list.len() == 1 {
                store
                    .validate_update(&list[0], NOW_SLOT)
                    .unwrap_or_else(|e| panic!("{case}/{name}: {e}"));
                side_checked += 1;
            }
        }
        store
            .process_update(update, NOW_SLOT)
            .unwrap_or_else(|e| panic!("period {period}: {e}"));
    }
    assert_eq!(store.finalized_period(), 1406);
    // One-update files at periods 1358, 1372 (x6), 1374 (x2), 1378, 1392 (x7), 1394 (x2),
    // 1401 (x3) and 1402.
    assert_eq!(side_checked, 23);
    // colibri's own stored committees (compressed `sync_1_<period>` files) for the periods the
    // chain passes through equal the committees this store proved.
    assert_eq!(
        colibri_checked.into_iter().collect::<Vec<_>>(),
        [1359, 1373, 1375, 1402, 1403]
    );
    let spec = ChainSpec::mainnet();
    let trusted = Bootstrap::from_ssz(
        &spec,
        &common::read_prefixed("trusted_block1", "eth_v1_beacon_light_client_bootstrap_"),
    )
    .unwrap();
    assert_eq!(
        store.next_sync_committee(),
        Some(&trusted.current_sync_committee)
    );
    let expected: B256 = "0xfc728271f234a95e04a101d2dc01717cd8e88edbc694f8a5377e396b08ff2591"
        .parse()
        .unwrap();
    assert_eq!(trusted.header.beacon.root(), expected);
}

/// The specs' finality and optimistic updates carry a subset of a full update: re-encoded
/// from a recorded update (Deneb and Electra), they decode with their own containers, verify,
/// and move the store's finalized and optimistic headers as the full update would.
#[test]
fn finality_and_optimistic_updates_from_recorded_updates() {
    use ssz::Encode;
    use ssz_types::FixedVector;
    use ssz_types::typenum::{U6, U7};
    use sszgate_light::spec::LcFork;
    use sszgate_light::types::{LightClientFinalityUpdateSsz, LightClientOptimisticUpdate};

    let spec = ChainSpec::mainnet();
    let cases = [
        (
            "eth_blockNumber_electra",
            "eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz",
            LcFork::Electra,
        ),
        (
            "eth_getBlockByNumber1",
            "eth_v1_beacon_light_client_updates_start_period_1392_count_1.ssz",
            LcFork::Deneb,
        ),
    ];
    for (case, name, fork) in cases {
        let update = updates(case, name).remove(0);
        assert_eq!(spec.lc_fork(update.attested_header.beacon.slot), Some(fork));
        let branch = update.finality_branch.clone();
        let finality = match fork {
            LcFork::Deneb => LightClientFinalityUpdateSsz::<U6> {
                attested_header: update.attested_header.clone(),
                finalized_header: update.finalized_header.clone(),
                finality_branch: FixedVector::new(branch).unwrap(),
                sync_aggregate: update.sync_aggregate.clone(),
                signature_slot: update.signature_slot,
            }
            .as_ssz_bytes(),
            LcFork::Electra => LightClientFinalityUpdateSsz::<U7> {
                attested_header: update.attested_header.clone(),
                finalized_header: update.finalized_header.clone(),
                finality_branch: FixedVector::new(branch).unwrap(),
                sync_aggregate: update.sync_aggregate.clone(),
                signature_slot: update.signature_slot,
            }
            .as_ssz_bytes(),
        };
        let optimistic = LightClientOptimisticUpdate {
            attested_header: update.attested_header.clone(),
            sync_aggregate: update.sync_aggregate.clone(),
            signature_slot: update.signature_slot,
        }
        .as_ssz_bytes();

        let mut store = bootstrap(case);
        let o = Update::from_optimistic_ssz(&spec, &optimistic).unwrap();
        let outcome = store.process_update(&o, NOW_SLOT).unwrap();
        assert!(outcome.optimistic_advanced && !outcome.applied, "{case}");
        assert_eq!(store.optimistic.header, update.attested_header);

        let f = Update::from_finality_ssz(&spec, &finality).unwrap();
        assert!(f.has_finality() && !f.has_next_sync_committee());
        let outcome = store.process_update(&f, NOW_SLOT).unwrap();
        assert!(outcome.applied, "{case}");
        assert_eq!(store.finalized_header, update.finalized_header);
        assert!(
            store.next_sync_committee().is_none(),
            "a finality update brings no committee"
        );
        // The same finality update again is valid (its attested header is newer than the
        // finalized one) but changes nothing.
        let again = store.process_update(&f, NOW_SLOT).unwrap();
        assert!(
            !again.applied && !again.optimistic_advanced && !again.safe_advanced,
            "{case}"
        );
    }
}

/// Every recorded bootstrap (16: eth_getLogs1 has none, eth_getTransactionByHash_electra a
/// recorded 404) verifies against its header root, the trusted root a user would give.
#[test]
fn every_recorded_bootstrap_verifies() {
    let spec = ChainSpec::mainnet();
    let mut verified = 0;
    for (case, name, bytes) in common::files_matching("eth_v1_beacon_light_client_bootstrap_") {
        if bytes.starts_with(b"{") {
            continue;
        }
        let b = Bootstrap::from_ssz(&spec, &bytes).unwrap();
        let store = LightClientStore::bootstrap(spec.clone(), b.header.beacon.root(), &b)
            .unwrap_or_else(|e| panic!("{case}/{name}: {e}"));
        assert_eq!(store.finalized_period(), spec.period(b.header.beacon.slot));
        verified += 1;
    }
    assert_eq!(verified, 16);
}
