//! Sync data for a verifier's client state (spec §12.6): the bootstrap of its checkpoint
//! and the light-client updates from the newest period it knows up to the period whose
//! committee signed the proof, each wrapped in the union option of its fork.
//!
//! Not here: checking them (the verifier's `trust`); proofs for periods older than the
//! client's (historic proofs).

use alloy_primitives::B256;
use ssz::Decode;
use ssz_types::VariableList;
use sszgate_light::client::{MAX_LC_OBJECT_BYTES, MAX_UPDATES_BYTES};
use sszgate_light::spec::LcFork;
use sszgate_light::types::{leading_header_slot, split_update_stream};
use sszgate_light::{BeaconApi, ChainSpec, HttpBeaconApi};

use super::{ProveError, upstream};
use crate::trust::ClientState;
use crate::types::{BootstrapUnion, LcSyncData, SyncDataUnion, UpdateUnion};

/// The most updates one request may make the prover fetch (one per period): a client further
/// behind starts from a newer checkpoint (`c4` = `02` and a block root it trusts, which is
/// sent as a bootstrap) or asks for proofs of older blocks first, catching up in steps.
pub(crate) const MAX_UPDATES_PER_REQUEST: u64 = 16;

/// The sync data a client in `state` needs to check a signature of period `needed`.
pub(crate) async fn sync_data(
    beacon: &HttpBeaconApi,
    spec: &ChainSpec,
    state: &ClientState,
    needed: u64,
) -> Result<SyncDataUnion, ProveError> {
    let (bootstrap, from) = match state {
        ClientState::Empty => return Ok(SyncDataUnion::None),
        ClientState::Periods(known) if known.contains(&needed) => return Ok(SyncDataUnion::None),
        ClientState::Periods(known) => match known.iter().max() {
            // Only forward: an older period needs a historic proof, not sync data.
            Some(&newest) if newest < needed => (BootstrapUnion::None, newest),
            _ => return Ok(SyncDataUnion::None),
        },
        ClientState::Checkpoint(root) => bootstrap(beacon, spec, *root).await?,
    };
    let update = if needed > from {
        updates(beacon, spec, from, needed - from).await?
    } else {
        Vec::new()
    };
    Ok(SyncDataUnion::LightClient(Box::new(LcSyncData {
        bootstrap,
        update: VariableList::new(update).map_err(|e| upstream(format!("{e:?}")))?,
    })))
}

/// The fork of a light-client object by its leading header's slot.
fn fork_of(spec: &ChainSpec, bytes: &[u8], what: &'static str) -> Result<LcFork, ProveError> {
    let slot = leading_header_slot(bytes, what).map_err(upstream)?;
    spec.lc_fork(slot)
        .ok_or_else(|| upstream(format!("{what} at slot {slot}: no light-client fork")))
}

fn decode<T: Decode>(bytes: &[u8], what: &str) -> Result<T, ProveError> {
    T::from_ssz_bytes(bytes).map_err(|e| upstream(format!("{what}: {e:?}")))
}

/// The bootstrap of `root` and the period of its header.
async fn bootstrap(
    beacon: &HttpBeaconApi,
    spec: &ChainSpec,
    root: B256,
) -> Result<(BootstrapUnion, u64), ProveError> {
    const WHAT: &str = "LightClientBootstrap";
    let path = format!("/eth/v1/beacon/light_client/bootstrap/{root}");
    let bytes = beacon
        .get_ssz(&path, MAX_LC_OBJECT_BYTES)
        .await
        .map_err(upstream)?;
    let slot = leading_header_slot(&bytes, WHAT).map_err(upstream)?;
    let union = match fork_of(spec, &bytes, WHAT)? {
        LcFork::Deneb => BootstrapUnion::Deneb(decode(&bytes, WHAT)?),
        LcFork::Electra => BootstrapUnion::Electra(decode(&bytes, WHAT)?),
    };
    Ok((union, spec.period(slot)))
}

/// `count` updates from period `start`, oldest first.
async fn updates(
    beacon: &HttpBeaconApi,
    spec: &ChainSpec,
    start: u64,
    count: u64,
) -> Result<Vec<UpdateUnion>, ProveError> {
    const WHAT: &str = "LightClientUpdate";
    if count > MAX_UPDATES_PER_REQUEST {
        return Err(ProveError::Params(format!(
            "c4: the client state is {count} periods behind the proof (from period {start}); at most {MAX_UPDATES_PER_REQUEST} periods of updates in one request: start from a newer checkpoint"
        )));
    }
    let path = format!("/eth/v1/beacon/light_client/updates?start_period={start}&count={count}");
    let bytes = beacon
        .get_ssz(&path, MAX_UPDATES_BYTES)
        .await
        .map_err(upstream)?;
    split_update_stream(&bytes, count as usize)
        .map_err(upstream)?
        .into_iter()
        .map(|item| {
            Ok(match fork_of(spec, item, WHAT)? {
                LcFork::Deneb => UpdateUnion::Deneb(decode(item, WHAT)?),
                LcFork::Electra => UpdateUnion::Electra(decode(item, WHAT)?),
            })
        })
        .collect()
}
