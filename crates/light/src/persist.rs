//! The store on disk: a small JSON file of SSZ hex blobs (finalized, optimistic and
//! supermajority headers, the current and next committees), so that a restart resumes from
//! what was verified instead of syncing from the checkpoint again.
//!
//! What does not live here: the checks (the file holds the store's own earlier state and is
//! trusted like it; it is tied to a chain by its genesis validators root).

use std::io::Read;
use std::path::Path;

use alloy_primitives::B256;
use serde::{Deserialize, Serialize};
use ssz::{Decode, Encode};

use crate::error::LightError;
use crate::spec::ChainSpec;
use crate::store::{LightClientStore, TrustedHeader};
use crate::types::{LightClientHeader, SyncCommittee};

/// Largest store file read (two committees and their uncompressed keys in hex are about
/// 300 KB).
pub const MAX_STORE_FILE_BYTES: u64 = 1 << 20;
/// Format version written in the file.
const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    genesis_validators_root: B256,
    finalized_header: String,
    current_sync_committee: String,
    next_sync_committee: Option<String>,
    optimistic_header: String,
    optimistic_participants: usize,
    safe_header: String,
    safe_participants: usize,
    /// The safety threshold's inputs (absent in older files: the threshold restarts at 0).
    #[serde(default)]
    previous_max_active_participants: usize,
    #[serde(default)]
    current_max_active_participants: usize,
    /// The committees' keys uncompressed (absent in older files: decompressed on load).
    #[serde(default)]
    current_keys: Option<String>,
    #[serde(default)]
    next_keys: Option<String>,
    /// The chain's parameters the store was verified under, pinned so that a later start with
    /// other ones is refused (absent in older files: only the genesis root is compared).
    #[serde(default)]
    chain: Option<SavedChain>,
}

/// The chain parameters pinned in the file (the genesis validators root is the file's own).
#[derive(Serialize, Deserialize)]
struct SavedChain {
    genesis_time: u64,
    seconds_per_slot: u64,
    slots_per_epoch: u64,
    epochs_per_period: u64,
    genesis_fork_version: B32,
    /// `(fork version, activation epoch)`, Altair on.
    forks: Vec<(B32, u64)>,
}

type B32 = alloy_primitives::FixedBytes<4>;

impl SavedChain {
    fn of(spec: &ChainSpec) -> SavedChain {
        SavedChain {
            genesis_time: spec.genesis_time,
            seconds_per_slot: spec.seconds_per_slot,
            slots_per_epoch: spec.slots_per_epoch,
            epochs_per_period: spec.epochs_per_period,
            genesis_fork_version: spec.genesis_fork_version.into(),
            forks: spec.forks.iter().map(|(v, e)| ((*v).into(), *e)).collect(),
        }
    }

    /// The saved parameters as a chain (with `spec`'s root, which the file matched).
    fn to_spec(&self, spec: &ChainSpec) -> ChainSpec {
        ChainSpec {
            name: "the saved store".into(),
            genesis_validators_root: spec.genesis_validators_root,
            genesis_time: self.genesis_time,
            seconds_per_slot: self.seconds_per_slot,
            slots_per_epoch: self.slots_per_epoch,
            epochs_per_period: self.epochs_per_period,
            genesis_fork_version: self.genesis_fork_version.0,
            forks: self.forks.iter().map(|(v, e)| (v.0, *e)).collect(),
        }
    }
}

fn persist_error(path: &Path, detail: impl std::fmt::Display) -> LightError {
    LightError::Persist {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

fn from_hex<T: Decode>(path: &Path, field: &str, text: &str) -> Result<T, LightError> {
    let bytes =
        const_hex::decode(text).map_err(|e| persist_error(path, format!("{field}: {e}")))?;
    T::from_ssz_bytes(&bytes).map_err(|e| persist_error(path, format!("{field}: {e:?}")))
}

/// Writes the store to `path` (through a temporary file renamed over it, so a crash leaves
/// either the old or the new file).
pub fn save(store: &LightClientStore, path: &Path) -> Result<(), LightError> {
    let (current_keys, next_keys) = store.uncompressed_keys();
    let file = StoreFile {
        version: FORMAT_VERSION,
        genesis_validators_root: store.spec.genesis_validators_root,
        finalized_header: const_hex::encode_prefixed(store.finalized_header.as_ssz_bytes()),
        current_sync_committee: const_hex::encode_prefixed(
            store.current_sync_committee().as_ssz_bytes(),
        ),
        next_sync_committee: store
            .next_sync_committee()
            .as_ref()
            .map(|c| const_hex::encode_prefixed(c.as_ssz_bytes())),
        optimistic_header: const_hex::encode_prefixed(store.optimistic.header.as_ssz_bytes()),
        optimistic_participants: store.optimistic.participants,
        safe_header: const_hex::encode_prefixed(store.safe.header.as_ssz_bytes()),
        safe_participants: store.safe.participants,
        previous_max_active_participants: store.previous_max_active_participants,
        current_max_active_participants: store.current_max_active_participants,
        current_keys: Some(const_hex::encode_prefixed(current_keys)),
        next_keys: next_keys.map(const_hex::encode_prefixed),
        chain: Some(SavedChain::of(&store.spec)),
    };
    let text = serde_json::to_vec_pretty(&file).map_err(|e| persist_error(path, e))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| persist_error(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| persist_error(path, e))
}

/// A file of at most `max` bytes, read without ever holding more than `max + 1` of them; a
/// larger one is an error (`InvalidData`), not a truncation. The one bounded file read of the
/// workspace: saved stores and keys, recorded blocks and answers.
pub fn read_file_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// Reads a store saved by [`save`] for the chain `spec`; `Ok(None)` when the file does not exist.
pub fn load(spec: &ChainSpec, path: &Path) -> Result<Option<LightClientStore>, LightError> {
    let text = match read_file_bounded(path, MAX_STORE_FILE_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(persist_error(path, e)),
    };
    let file: StoreFile = serde_json::from_slice(&text).map_err(|e| persist_error(path, e))?;
    if file.version != FORMAT_VERSION {
        return Err(persist_error(
            path,
            format!(
                "format version {} (expected {FORMAT_VERSION})",
                file.version
            ),
        ));
    }
    if file.genesis_validators_root != spec.genesis_validators_root {
        return Err(persist_error(
            path,
            format!(
                "saved for chain {} not {}",
                file.genesis_validators_root, spec.genesis_validators_root
            ),
        ));
    }
    if let Some(saved) = &file.chain {
        saved
            .to_spec(spec)
            .check_same(spec, "this start")
            .map_err(|e| persist_error(path, format!("saved under other chain parameters: {e}")))?;
    }
    let next = match &file.next_sync_committee {
        Some(text) => Some(from_hex::<SyncCommittee>(
            path,
            "next_sync_committee",
            text,
        )?),
        None => None,
    };
    let saved_keys = |text: &Option<String>| text.as_ref().and_then(|t| const_hex::decode(t).ok());
    let (current_keys, next_keys) = (saved_keys(&file.current_keys), saved_keys(&file.next_keys));
    let mut store = LightClientStore::from_parts(
        spec.clone(),
        from_hex::<LightClientHeader>(path, "finalized_header", &file.finalized_header)?,
        from_hex(path, "current_sync_committee", &file.current_sync_committee)?,
        next,
        TrustedHeader {
            header: from_hex(path, "optimistic_header", &file.optimistic_header)?,
            participants: file.optimistic_participants,
        },
        TrustedHeader {
            header: from_hex(path, "safe_header", &file.safe_header)?,
            participants: file.safe_participants,
        },
        [current_keys.as_deref(), next_keys.as_deref()],
    )?;
    store.previous_max_active_participants = file.previous_max_active_participants;
    store.current_max_active_participants = file.current_max_active_participants;
    Ok(Some(store))
}
