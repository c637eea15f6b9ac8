//! Chain parameters the light client needs: genesis, slot timing, the fork schedule and the
//! signing domain of the sync committee. Built-in mainnet, sepolia and hoodi, or read from a
//! beacon node's `/eth/v1/config/spec` and `/eth/v1/beacon/genesis` answers.
//!
//! What does not live here: the containers (see `types`) and the BLS check (see `bls`).

use alloy_primitives::B256;
use serde_json::Value;

use crate::error::LightError;

/// `DOMAIN_SYNC_COMMITTEE` of the consensus specs.
pub const DOMAIN_SYNC_COMMITTEE: [u8; 4] = [7, 0, 0, 0];
/// Members of a sync committee.
pub const SYNC_COMMITTEE_SIZE: usize = 512;
/// `MIN_SYNC_COMMITTEE_PARTICIPANTS` of the sync protocol.
pub const MIN_SYNC_COMMITTEE_PARTICIPANTS: usize = 1;

/// A fork whose light-client containers this crate knows. Fulu reuses Electra's containers
/// (its state keeps the light-client fields at Electra's generalized indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LcFork {
    /// Deneb: 28 state fields, branch depths 5 (committees) and 6 (finality).
    Deneb,
    /// Electra and Fulu: 37+ state fields, branch depths 6 and 7.
    Electra,
}

impl LcFork {
    /// Generalized index of `current_sync_committee` in the beacon state.
    pub fn current_sync_committee_gindex(self) -> u64 {
        match self {
            LcFork::Deneb => 54,
            LcFork::Electra => 86,
        }
    }
    /// Generalized index of `next_sync_committee` in the beacon state.
    pub fn next_sync_committee_gindex(self) -> u64 {
        match self {
            LcFork::Deneb => 55,
            LcFork::Electra => 87,
        }
    }
    /// Generalized index of `finalized_checkpoint.root` in the beacon state.
    pub fn finalized_root_gindex(self) -> u64 {
        match self {
            LcFork::Deneb => 105,
            LcFork::Electra => 169,
        }
    }
}

/// The scheduled forks' config keys, in order: `(<NAME>_FORK_VERSION, <NAME>_FORK_EPOCH)`.
const FORK_KEYS: [(&str, &str); FORK_COUNT] = [
    ("ALTAIR_FORK_VERSION", "ALTAIR_FORK_EPOCH"),
    ("BELLATRIX_FORK_VERSION", "BELLATRIX_FORK_EPOCH"),
    ("CAPELLA_FORK_VERSION", "CAPELLA_FORK_EPOCH"),
    ("DENEB_FORK_VERSION", "DENEB_FORK_EPOCH"),
    ("ELECTRA_FORK_VERSION", "ELECTRA_FORK_EPOCH"),
    ("FULU_FORK_VERSION", "FULU_FORK_EPOCH"),
    ("GLOAS_FORK_VERSION", "GLOAS_FORK_EPOCH"),
];
/// Index in [`FORK_KEYS`] + 1 of Deneb, Electra and Gloas (0 is the genesis fork). Gloas
/// changes the light-client containers: headers from it on are refused as unsupported.
const DENEB_INDEX: usize = 4;
const ELECTRA_INDEX: usize = 5;
const GLOAS_INDEX: usize = 7;
/// Scheduled forks known here (Altair to Gloas).
const FORK_COUNT: usize = 7;
/// The epoch of a fork that is not scheduled.
const UNSCHEDULED: u64 = u64::MAX;

/// A chain's parameters as the light client uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSpec {
    /// Name for logs (`mainnet`, `sepolia`, `hoodi` or `custom`).
    pub name: String,
    /// `genesis_validators_root`, part of every signing domain.
    pub genesis_validators_root: B256,
    /// Unix time of slot 0.
    pub genesis_time: u64,
    /// `SECONDS_PER_SLOT`.
    pub seconds_per_slot: u64,
    /// `SLOTS_PER_EPOCH`.
    pub slots_per_epoch: u64,
    /// `EPOCHS_PER_SYNC_COMMITTEE_PERIOD`.
    pub epochs_per_period: u64,
    /// `GENESIS_FORK_VERSION`.
    pub genesis_fork_version: [u8; 4],
    /// Altair to Gloas: `(fork version, activation epoch)`, `u64::MAX` when not scheduled.
    pub forks: Vec<([u8; 4], u64)>,
}

fn b256(hex: &str) -> B256 {
    // Only called on the constants below, which are valid.
    hex.parse().unwrap_or_default()
}

impl ChainSpec {
    /// Ethereum mainnet.
    pub fn mainnet() -> Self {
        let epochs = [74240, 144896, 194048, 269568, 364032, 411392, UNSCHEDULED];
        ChainSpec {
            name: "mainnet".into(),
            genesis_validators_root: b256(
                "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95",
            ),
            genesis_time: 1606824023,
            seconds_per_slot: 12,
            slots_per_epoch: 32,
            epochs_per_period: 256,
            genesis_fork_version: [0, 0, 0, 0],
            forks: (0..FORK_COUNT)
                .map(|i| ([i as u8 + 1, 0, 0, 0], epochs[i]))
                .collect(),
        }
    }

    /// The Sepolia testnet (eth-clients/sepolia `metadata/config.yaml`; Fulu's epoch as the
    /// consensus clients' built-in configs schedule it).
    pub fn sepolia() -> Self {
        let epochs = [50, 100, 56832, 132608, 222464, 272640, UNSCHEDULED];
        ChainSpec {
            name: "sepolia".into(),
            genesis_validators_root: b256(
                "0xd8ea171f3c94aea21ebc42a1ed61052acf3f9209c00e4efbaaddac09ed9b8078",
            ),
            genesis_time: 1655733600,
            seconds_per_slot: 12,
            slots_per_epoch: 32,
            epochs_per_period: 256,
            genesis_fork_version: [0x90, 0, 0, 0x69],
            forks: (0..FORK_COUNT)
                .map(|i| ([0x90, 0, 0, 0x70 + i as u8], epochs[i]))
                .collect(),
        }
    }

    /// The Hoodi testnet (eth-clients/hoodi `metadata/config.yaml`; Fulu's epoch as the
    /// consensus clients' built-in configs schedule it).
    pub fn hoodi() -> Self {
        let epochs = [0, 0, 0, 0, 2048, 50688, UNSCHEDULED];
        ChainSpec {
            name: "hoodi".into(),
            genesis_validators_root: b256(
                "0x212f13fc4df078b6cb7db228f1c8307566dcecf900867401a92023d7ba99cb5f",
            ),
            genesis_time: 1742213400,
            seconds_per_slot: 12,
            slots_per_epoch: 32,
            epochs_per_period: 256,
            genesis_fork_version: [0x10, 0, 0x09, 0x10],
            forks: (0..FORK_COUNT)
                .map(|i| ([0x20 + 0x10 * i as u8, 0, 0x09, 0x10], epochs[i]))
                .collect(),
        }
    }

    /// The built-in chain whose genesis validators root this is, if any.
    pub fn known(genesis_validators_root: &B256) -> Option<Self> {
        [Self::mainnet(), Self::sepolia(), Self::hoodi()]
            .into_iter()
            .find(|c| &c.genesis_validators_root == genesis_validators_root)
    }

    /// The chain as a beacon node's `/eth/v1/config/spec` and `/eth/v1/beacon/genesis` answer
    /// it (their `data` members; what [`ChainSpec::from_beacon_api`] reads back): for serving
    /// a chain's parameters, as test nodes and the attack campaign do.
    pub fn to_beacon_api(&self) -> (Value, Value) {
        let mut config = serde_json::json!({
            "PRESET_BASE": "mainnet",
            "SECONDS_PER_SLOT": self.seconds_per_slot.to_string(),
            "SLOTS_PER_EPOCH": self.slots_per_epoch.to_string(),
            "EPOCHS_PER_SYNC_COMMITTEE_PERIOD": self.epochs_per_period.to_string(),
            "GENESIS_FORK_VERSION": const_hex::encode_prefixed(self.genesis_fork_version),
        });
        for ((version_key, epoch_key), (version, epoch)) in FORK_KEYS.iter().zip(&self.forks) {
            config[*version_key] = const_hex::encode_prefixed(version).into();
            config[*epoch_key] = epoch.to_string().into();
        }
        let genesis = serde_json::json!({
            "genesis_time": self.genesis_time.to_string(),
            "genesis_validators_root": self.genesis_validators_root.to_string(),
            "genesis_fork_version": const_hex::encode_prefixed(self.genesis_fork_version),
        });
        (config, genesis)
    }

    /// Reads the chain from a beacon node's `/eth/v1/config/spec` and `/eth/v1/beacon/genesis`
    /// answers (the whole JSON documents, with their `data` member).
    /// Only the mainnet preset is supported (its container sizes are compiled in): a node on
    /// another preset (e.g. `minimal`, 32-member committees) is refused here.
    pub fn from_beacon_api(spec: &Value, genesis: &Value) -> Result<Self, LightError> {
        let spec = spec.get("data").unwrap_or(spec);
        let genesis = genesis.get("data").unwrap_or(genesis);
        check_mainnet_preset(spec)?;
        // A fork the node does not know is not scheduled (epoch u64::MAX).
        let forks = FORK_KEYS
            .iter()
            .map(|(version_key, epoch_key)| {
                let version = config_version(spec, version_key)?;
                let epoch = config_u64(spec, epoch_key).unwrap_or(UNSCHEDULED);
                Ok((version.unwrap_or([0xff; 4]), epoch))
            })
            .collect::<Result<Vec<_>, LightError>>()?;
        let root = genesis
            .get("genesis_validators_root")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<B256>().ok())
            .ok_or(LightError::Config {
                field: "genesis_validators_root",
            })?;
        Ok(ChainSpec {
            name: "custom".into(),
            genesis_validators_root: root,
            genesis_time: config_u64(genesis, "genesis_time").ok_or(LightError::Config {
                field: "genesis_time",
            })?,
            seconds_per_slot: config_u64(spec, "SECONDS_PER_SLOT")
                .filter(|s| *s > 0)
                .ok_or(LightError::Config {
                    field: "SECONDS_PER_SLOT",
                })?,
            slots_per_epoch: config_u64(spec, "SLOTS_PER_EPOCH")
                .filter(|s| *s > 0)
                .ok_or(LightError::Config {
                    field: "SLOTS_PER_EPOCH",
                })?,
            epochs_per_period: config_u64(spec, "EPOCHS_PER_SYNC_COMMITTEE_PERIOD")
                .filter(|s| *s > 0)
                .ok_or(LightError::Config {
                    field: "EPOCHS_PER_SYNC_COMMITTEE_PERIOD",
                })?,
            genesis_fork_version: config_version(spec, "GENESIS_FORK_VERSION")?.ok_or(
                LightError::Config {
                    field: "GENESIS_FORK_VERSION",
                },
            )?,
            forks,
        })
    }

    /// Refuses `other` (the node's parameters, or a saved store's; `source` names it) where it
    /// differs from these, naming the first field that does: genesis, slot timing, period
    /// length, and every fork these schedule (a fork scheduled only by `other` is not
    /// compared: it came after these parameters were written).
    pub fn check_same(&self, other: &ChainSpec, source: &str) -> Result<(), LightError> {
        let hex4 = |v: [u8; 4]| const_hex::encode_prefixed(v);
        let number = |field, ours: u64, theirs: u64| (field, ours.to_string(), theirs.to_string());
        let (ours, theirs) = (self, other);
        let mut fields = vec![
            (
                "genesis_validators_root",
                ours.genesis_validators_root.to_string(),
                theirs.genesis_validators_root.to_string(),
            ),
            number("genesis_time", ours.genesis_time, theirs.genesis_time),
            number(
                "SECONDS_PER_SLOT",
                ours.seconds_per_slot,
                theirs.seconds_per_slot,
            ),
            number(
                "SLOTS_PER_EPOCH",
                ours.slots_per_epoch,
                theirs.slots_per_epoch,
            ),
            number(
                "EPOCHS_PER_SYNC_COMMITTEE_PERIOD",
                ours.epochs_per_period,
                theirs.epochs_per_period,
            ),
            (
                "GENESIS_FORK_VERSION",
                hex4(ours.genesis_fork_version),
                hex4(theirs.genesis_fork_version),
            ),
        ];
        for (i, ((version, epoch), theirs)) in self.forks.iter().zip(&other.forks).enumerate() {
            if *epoch == UNSCHEDULED {
                continue;
            }
            let (version_key, epoch_key) = FORK_KEYS[i];
            fields.push((version_key, hex4(*version), hex4(theirs.0)));
            fields.push((epoch_key, epoch.to_string(), theirs.1.to_string()));
        }
        match fields.into_iter().find(|(_, ours, theirs)| ours != theirs) {
            None => Ok(()),
            Some((field, ours, theirs)) => Err(LightError::FieldMismatch {
                check: "chain_spec",
                field,
                detail: format!("({source} says {theirs}, {} is {ours})", self.name),
            }),
        }
    }

    /// Epoch of a slot.
    pub fn epoch(&self, slot: u64) -> u64 {
        slot / self.slots_per_epoch
    }

    /// Sync-committee period of a slot.
    pub fn period(&self, slot: u64) -> u64 {
        self.epoch(slot) / self.epochs_per_period
    }

    /// First slot of a sync-committee period.
    pub fn period_start_slot(&self, period: u64) -> u64 {
        period
            .saturating_mul(self.epochs_per_period)
            .saturating_mul(self.slots_per_epoch)
    }

    /// The slot the wall clock is in (0 before genesis).
    pub fn slot_at(&self, unix_seconds: u64) -> u64 {
        unix_seconds.saturating_sub(self.genesis_time) / self.seconds_per_slot
    }

    /// When the forks that change the EVM begin, in Unix seconds: Capella, Deneb, Electra and
    /// Fulu (`None` when not scheduled or beyond any time), for `sszgate-exec`'s fork table.
    pub fn execution_fork_times(&self) -> [Option<u64>; 4] {
        // `forks`: Altair, Bellatrix, Capella, Deneb, Electra, Fulu, …
        std::array::from_fn(|i| {
            let epoch = self.forks.get(i + 2)?.1;
            let seconds = epoch
                .checked_mul(self.slots_per_epoch)?
                .checked_mul(self.seconds_per_slot)?;
            self.genesis_time.checked_add(seconds)
        })
    }

    /// Index of the fork active at `epoch`: 0 genesis, 1 Altair … 6 Fulu, 7 Gloas.
    fn fork_index(&self, epoch: u64) -> usize {
        self.forks.iter().take_while(|(_, e)| *e <= epoch).count()
    }

    /// `compute_fork_version(epoch)`.
    pub fn fork_version(&self, epoch: u64) -> [u8; 4] {
        match self.fork_index(epoch) {
            0 => self.genesis_fork_version,
            i => self.forks[i - 1].0,
        }
    }

    /// The Beacon API's name (`version`) of the fork active at `slot`: `phase0` … `gloas`.
    pub fn fork_name(&self, slot: u64) -> &'static str {
        const NAMES: [&str; FORK_COUNT + 1] = [
            "phase0",
            "altair",
            "bellatrix",
            "capella",
            "deneb",
            "electra",
            "fulu",
            "gloas",
        ];
        NAMES[self.fork_index(self.epoch(slot)).min(FORK_COUNT)]
    }

    /// Which light-client containers a header at `slot` uses; `None` before Deneb and from
    /// Gloas on.
    pub fn lc_fork(&self, slot: u64) -> Option<LcFork> {
        match self.fork_index(self.epoch(slot)) {
            i if i >= GLOAS_INDEX => None,
            i if i >= ELECTRA_INDEX => Some(LcFork::Electra),
            i if i >= DENEB_INDEX => Some(LcFork::Deneb),
            _ => None,
        }
    }

    /// `compute_domain(DOMAIN_SYNC_COMMITTEE, fork_version, genesis_validators_root)`.
    pub fn sync_committee_domain(&self, fork_version: [u8; 4]) -> B256 {
        // fork_data_root = hash_tree_root(ForkData{version, root}): two leaves, the version
        // padded to 32 bytes, then the root, so one node hash (`hash_pair`: in WASM a twentieth
        // of a cold account proof's verify went to sha2's hasher here).
        let mut version = [0u8; 32];
        version[..4].copy_from_slice(&fork_version);
        let fork_data_root = crate::merkle::hash_pair(&version, &self.genesis_validators_root.0);
        let mut domain = [0u8; 32];
        domain[..4].copy_from_slice(&DOMAIN_SYNC_COMMITTEE);
        domain[4..].copy_from_slice(&fork_data_root[..28]);
        B256::from(domain)
    }

    /// The domain a sync aggregate included at `signature_slot` was signed with: the fork of
    /// `epoch(max(signature_slot, 1) - 1)`, as the consensus specs define it.
    pub fn domain_for_signature_slot(&self, signature_slot: u64) -> B256 {
        let fork_slot = signature_slot.max(1) - 1;
        self.sync_committee_domain(self.fork_version(self.epoch(fork_slot)))
    }
}

/// `compute_signing_root(object_root, domain)`: `hash_tree_root(SigningData)`.
pub fn signing_root(object_root: B256, domain: B256) -> B256 {
    // `SigningData` is two chunks: its root is one node hash.
    B256::from(crate::merkle::hash_pair(&object_root.0, &domain.0))
}

/// Refuses a config whose preset is not mainnet (`PRESET_BASE`, or the preset's
/// `SYNC_COMMITTEE_SIZE` and `MAX_WITHDRAWALS_PER_PAYLOAD` where the node lists them).
fn check_mainnet_preset(spec: &Value) -> Result<(), LightError> {
    let preset = spec
        .get("PRESET_BASE")
        .and_then(Value::as_str)
        .map(|p| p.trim_matches('\''));
    if preset.is_some_and(|p| p != "mainnet") {
        return Err(LightError::Config {
            field: "PRESET_BASE (only mainnet is supported)",
        });
    }
    let sizes = [
        ("SYNC_COMMITTEE_SIZE", SYNC_COMMITTEE_SIZE as u64),
        ("MAX_WITHDRAWALS_PER_PAYLOAD", 16),
    ];
    for (key, mainnet) in sizes {
        if config_u64(spec, key).is_some_and(|v| v != mainnet) {
            return Err(LightError::Config { field: key });
        }
    }
    // A pre-release Electra (e.g. Lodestar v1.22: 1) hashes its blocks' execution requests
    // with another list limit than the final spec's 2: such blocks cannot be bound to their
    // roots here, so only light-client headers anchor execution blocks on that chain.
    #[cfg(feature = "log")]
    if let Some(limit) = config_u64(spec, "MAX_CONSOLIDATION_REQUESTS_PER_PAYLOAD")
        && limit != 2
    {
        tracing::warn!(
            limit,
            "the beacon node's MAX_CONSOLIDATION_REQUESTS_PER_PAYLOAD is {limit}, not the final Electra spec's 2: its Electra blocks' roots will not match, and execution blocks are anchored only through light-client headers and parent hashes"
        );
    }
    Ok(())
}

/// A decimal number the Beacon API writes as a string (or, leniently, as a JSON number).
fn config_u64(doc: &Value, key: &str) -> Option<u64> {
    match doc.get(key)? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// A 4-byte fork version (`0x…`); `Ok(None)` when the key is absent, an error when malformed.
fn config_version(doc: &Value, key: &'static str) -> Result<Option<[u8; 4]>, LightError> {
    let Some(value) = doc.get(key) else {
        return Ok(None);
    };
    let text = value.as_str().ok_or(LightError::Config { field: key })?;
    let bytes = const_hex::decode(text).map_err(|_| LightError::Config { field: key })?;
    let version: [u8; 4] = bytes
        .try_into()
        .map_err(|_| LightError::Config { field: key })?;
    Ok(Some(version))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sync aggregate included in the first slot of Electra's fork epoch was signed in the
    /// last slot of Deneb: its domain uses Deneb's version; one slot later, Electra's.
    #[test]
    fn signature_domain_uses_the_slot_before() {
        let spec = ChainSpec::mainnet();
        let electra_start = 364032 * 32;
        assert_eq!(spec.fork_version(spec.epoch(electra_start)), [5, 0, 0, 0]);
        assert_eq!(
            spec.domain_for_signature_slot(electra_start),
            spec.sync_committee_domain([4, 0, 0, 0])
        );
        assert_eq!(
            spec.domain_for_signature_slot(electra_start + 1),
            spec.sync_committee_domain([5, 0, 0, 0])
        );
        assert_eq!(
            spec.domain_for_signature_slot(0),
            spec.sync_committee_domain([0, 0, 0, 0])
        );
    }

    /// The domain's node hash agrees with SHA-256 of the 64-byte `ForkData` computed by sha2,
    /// for every fork version of mainnet and a changed one.
    #[test]
    fn sync_committee_domain_is_compute_domain() {
        use sha2::{Digest, Sha256};
        let spec = ChainSpec::mainnet();
        let versions = std::iter::once(spec.genesis_fork_version)
            .chain(spec.forks.iter().map(|(v, _)| *v))
            .chain([[9, 9, 9, 9]]);
        for version in versions {
            let mut fork_data = [0u8; 64];
            fork_data[..4].copy_from_slice(&version);
            fork_data[32..].copy_from_slice(spec.genesis_validators_root.as_slice());
            let root = Sha256::digest(fork_data);
            let mut expected = [0u8; 32];
            expected[..4].copy_from_slice(&DOMAIN_SYNC_COMMITTEE);
            expected[4..].copy_from_slice(&root[..28]);
            assert_eq!(
                spec.sync_committee_domain(version),
                B256::from(expected),
                "{version:?}"
            );
        }
    }

    #[test]
    fn light_client_fork_by_slot() {
        let spec = ChainSpec::mainnet();
        assert_eq!(spec.lc_fork(269568 * 32 - 1), None);
        assert_eq!(spec.lc_fork(269568 * 32), Some(LcFork::Deneb));
        assert_eq!(spec.lc_fork(364032 * 32), Some(LcFork::Electra));
        assert_eq!(spec.lc_fork(411392 * 32), Some(LcFork::Electra));
        assert_eq!(spec.fork_name(269568 * 32 - 1), "capella");
        assert_eq!(spec.fork_name(364032 * 32), "electra");
        assert_eq!(spec.fork_name(411392 * 32), "fulu");
        let mut gloas = spec.clone();
        gloas.forks[6].1 = 500000;
        assert_eq!(gloas.fork_name(500000 * 32), "gloas");
        assert_eq!(gloas.lc_fork(500000 * 32 - 1), Some(LcFork::Electra));
        assert_eq!(
            gloas.lc_fork(500000 * 32),
            None,
            "Gloas containers are not supported"
        );
        assert_eq!(spec.period(11658783), 1423);
    }

    /// Every built-in chain, served as a beacon node serves it, reads back to itself.
    #[test]
    fn a_chain_served_as_a_node_serves_it_reads_back_the_same() {
        for chain in [
            ChainSpec::mainnet(),
            ChainSpec::sepolia(),
            ChainSpec::hoodi(),
        ] {
            let (config, genesis) = chain.to_beacon_api();
            let read = ChainSpec::from_beacon_api(&config, &genesis).unwrap();
            assert_eq!(
                read,
                ChainSpec {
                    name: "custom".into(),
                    ..chain
                }
            );
        }
    }

    /// The config of a beacon node reproduces the built-in mainnet parameters.
    #[test]
    fn from_beacon_api_reads_mainnet() {
        let mut config = serde_json::json!({"SECONDS_PER_SLOT": "12", "SLOTS_PER_EPOCH": "32",
            "EPOCHS_PER_SYNC_COMMITTEE_PERIOD": "256", "GENESIS_FORK_VERSION": "0x00000000"});
        let names = [
            "ALTAIR",
            "BELLATRIX",
            "CAPELLA",
            "DENEB",
            "ELECTRA",
            "FULU",
            "GLOAS",
        ];
        let epochs = [74240, 144896, 194048, 269568, 364032, 411392, u64::MAX];
        for (i, name) in names.iter().enumerate() {
            config[format!("{name}_FORK_VERSION")] = format!("0x0{}000000", i + 1).into();
            config[format!("{name}_FORK_EPOCH")] = epochs[i].to_string().into();
        }
        let genesis = serde_json::json!({"data": {"genesis_time": "1606824023",
            "genesis_validators_root": "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95",
            "genesis_fork_version": "0x00000000"}});
        let spec =
            ChainSpec::from_beacon_api(&serde_json::json!({ "data": config }), &genesis).unwrap();
        let mainnet = ChainSpec::mainnet();
        assert_eq!(
            ChainSpec {
                name: mainnet.name.clone(),
                ..spec
            },
            mainnet
        );
        let mut broken = config.clone();
        broken["SLOTS_PER_EPOCH"] = "0".into();
        let err = ChainSpec::from_beacon_api(&broken, &genesis).unwrap_err();
        assert!(matches!(
            err,
            LightError::Config {
                field: "SLOTS_PER_EPOCH"
            }
        ));
    }
}
