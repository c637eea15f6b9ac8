//! Signed beacon blocks (Deneb; Electra, also used by Fulu) as the Beacon API serves them
//! (`/eth/v2/beacon/blocks/{id}`, octet-stream), with the mainnet preset's list limits, so
//! that a block's body root and block root can be recomputed from its bytes.
//!
//! What does not live here: which blocks are trusted (see `anchor`).

use alloy_primitives::{Address, B256, FixedBytes};
use ssz::{Decode, Encode};
use ssz_derive::{Decode, Encode};
use ssz_types::typenum::{
    U1, U2, U8, U16, U33, U64, U128, U2048, U4096, U8192, U131072, U1048576, U1073741824,
};
use ssz_types::{BitList, BitVector, FixedVector, VariableList};
use tree_hash::TreeHash;
use tree_hash_derive::TreeHash;

use crate::error::LightError;
use crate::spec::{ChainSpec, LcFork};
use crate::types::{BeaconBlockHeader, BlsPublicKey, BlsSignature, SyncAggregate};

/// `Eth1Data`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct Eth1Data {
    /// Deposit contract root.
    pub deposit_root: B256,
    /// Deposit count.
    pub deposit_count: u64,
    /// Execution block hash voted for.
    pub block_hash: B256,
}

/// `SignedBeaconBlockHeader`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct SignedBeaconBlockHeader {
    /// The header.
    pub message: BeaconBlockHeader,
    /// The proposer's signature.
    pub signature: BlsSignature,
}

/// `ProposerSlashing`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ProposerSlashing {
    /// First header.
    pub signed_header_1: SignedBeaconBlockHeader,
    /// Second header.
    pub signed_header_2: SignedBeaconBlockHeader,
}

/// `Checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct Checkpoint {
    /// Epoch.
    pub epoch: u64,
    /// Block root.
    pub root: B256,
}

/// `AttestationData`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct AttestationData {
    /// Slot.
    pub slot: u64,
    /// Committee index (0 from Electra on).
    pub index: u64,
    /// Head vote.
    pub beacon_block_root: B256,
    /// Source checkpoint.
    pub source: Checkpoint,
    /// Target checkpoint.
    pub target: Checkpoint,
}

/// `IndexedAttestation`, generic over the index limit (Deneb 2048, Electra 2048 · 64).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct IndexedAttestation<N: ssz_types::typenum::Unsigned> {
    /// Attesting validator indices.
    pub attesting_indices: VariableList<u64, N>,
    /// What they attested.
    pub data: AttestationData,
    /// Aggregate signature.
    pub signature: BlsSignature,
}

/// `AttesterSlashing`, generic over the index limit.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct AttesterSlashing<N: ssz_types::typenum::Unsigned> {
    /// First attestation.
    pub attestation_1: IndexedAttestation<N>,
    /// Second attestation.
    pub attestation_2: IndexedAttestation<N>,
}

/// Deneb `Attestation`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct DenebAttestation {
    /// Participation bits.
    pub aggregation_bits: BitList<U2048>,
    /// What was attested.
    pub data: AttestationData,
    /// Aggregate signature.
    pub signature: BlsSignature,
}

/// Electra `Attestation` (EIP-7549: committees in `committee_bits`).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ElectraAttestation {
    /// Participation bits over all committees of the slot.
    pub aggregation_bits: BitList<U131072>,
    /// What was attested.
    pub data: AttestationData,
    /// Aggregate signature.
    pub signature: BlsSignature,
    /// The committees included.
    pub committee_bits: BitVector<U64>,
}

/// `DepositData`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct DepositData {
    /// Validator key.
    pub pubkey: BlsPublicKey,
    /// Withdrawal credentials.
    pub withdrawal_credentials: B256,
    /// Amount in Gwei.
    pub amount: u64,
    /// Deposit signature.
    pub signature: BlsSignature,
}

/// `Deposit`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct Deposit {
    /// Branch in the deposit tree (depth 32 and the length).
    pub proof: FixedVector<B256, U33>,
    /// The deposit.
    pub data: DepositData,
}

/// `VoluntaryExit`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct VoluntaryExit {
    /// Earliest exit epoch.
    pub epoch: u64,
    /// Exiting validator.
    pub validator_index: u64,
}

/// `SignedVoluntaryExit`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct SignedVoluntaryExit {
    /// The exit.
    pub message: VoluntaryExit,
    /// The validator's signature.
    pub signature: BlsSignature,
}

/// `Withdrawal`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct Withdrawal {
    /// Global withdrawal index.
    pub index: u64,
    /// Validator.
    pub validator_index: u64,
    /// Execution address credited.
    pub address: Address,
    /// Amount in Gwei.
    pub amount: u64,
}

/// `ExecutionPayload` (Deneb; unchanged in Electra and Fulu).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ExecutionPayload {
    /// Parent execution block hash.
    pub parent_hash: B256,
    /// Fee recipient.
    pub fee_recipient: Address,
    /// Execution state root.
    pub state_root: B256,
    /// Receipts root.
    pub receipts_root: B256,
    /// Logs bloom.
    pub logs_bloom: FixedBytes<256>,
    /// `prev_randao`.
    pub prev_randao: B256,
    /// Execution block number.
    pub block_number: u64,
    /// Gas limit.
    pub gas_limit: u64,
    /// Gas used.
    pub gas_used: u64,
    /// Timestamp.
    pub timestamp: u64,
    /// Extra data.
    pub extra_data: VariableList<u8, ssz_types::typenum::U32>,
    /// Base fee per gas.
    pub base_fee_per_gas: alloy_primitives::U256,
    /// Execution block hash.
    pub block_hash: B256,
    /// Raw transactions.
    pub transactions: VariableList<VariableList<u8, U1073741824>, U1048576>,
    /// Withdrawals.
    pub withdrawals: VariableList<Withdrawal, U16>,
    /// Blob gas used.
    pub blob_gas_used: u64,
    /// Excess blob gas.
    pub excess_blob_gas: u64,
}

/// `BLSToExecutionChange`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct BlsToExecutionChange {
    /// Validator.
    pub validator_index: u64,
    /// Its BLS withdrawal key.
    pub from_bls_pubkey: BlsPublicKey,
    /// New execution withdrawal address.
    pub to_execution_address: Address,
}

/// `SignedBLSToExecutionChange`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct SignedBlsToExecutionChange {
    /// The change.
    pub message: BlsToExecutionChange,
    /// Signature by the BLS withdrawal key.
    pub signature: BlsSignature,
}

/// `DepositRequest` (Electra).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct DepositRequest {
    /// Validator key.
    pub pubkey: BlsPublicKey,
    /// Withdrawal credentials.
    pub withdrawal_credentials: B256,
    /// Amount in Gwei.
    pub amount: u64,
    /// Deposit signature.
    pub signature: BlsSignature,
    /// Deposit index.
    pub index: u64,
}

/// `WithdrawalRequest` (Electra).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct WithdrawalRequest {
    /// Requesting execution address.
    pub source_address: Address,
    /// Validator.
    pub validator_pubkey: BlsPublicKey,
    /// Amount in Gwei.
    pub amount: u64,
}

/// `ConsolidationRequest` (Electra).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ConsolidationRequest {
    /// Requesting execution address.
    pub source_address: Address,
    /// Source validator.
    pub source_pubkey: BlsPublicKey,
    /// Target validator.
    pub target_pubkey: BlsPublicKey,
}

/// `ExecutionRequests` (Electra).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ExecutionRequests {
    /// Deposits.
    pub deposits: VariableList<DepositRequest, U8192>,
    /// Withdrawals.
    pub withdrawals: VariableList<WithdrawalRequest, U16>,
    /// Consolidations.
    pub consolidations: VariableList<ConsolidationRequest, U2>,
}

/// Deneb `BeaconBlockBody`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct DenebBeaconBlockBody {
    /// RANDAO reveal.
    pub randao_reveal: BlsSignature,
    /// Eth1 vote.
    pub eth1_data: Eth1Data,
    /// Graffiti.
    pub graffiti: B256,
    /// Proposer slashings.
    pub proposer_slashings: VariableList<ProposerSlashing, U16>,
    /// Attester slashings.
    pub attester_slashings: VariableList<AttesterSlashing<U2048>, U2>,
    /// Attestations.
    pub attestations: VariableList<DenebAttestation, U128>,
    /// Deposits.
    pub deposits: VariableList<Deposit, U16>,
    /// Voluntary exits.
    pub voluntary_exits: VariableList<SignedVoluntaryExit, U16>,
    /// The sync committee's signature over the parent block.
    pub sync_aggregate: SyncAggregate,
    /// The execution payload.
    pub execution_payload: ExecutionPayload,
    /// BLS-to-execution changes.
    pub bls_to_execution_changes: VariableList<SignedBlsToExecutionChange, U16>,
    /// Blob KZG commitments.
    pub blob_kzg_commitments: VariableList<BlsPublicKey, U4096>,
}

/// Electra (and Fulu) `BeaconBlockBody`.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ElectraBeaconBlockBody {
    /// RANDAO reveal.
    pub randao_reveal: BlsSignature,
    /// Eth1 vote.
    pub eth1_data: Eth1Data,
    /// Graffiti.
    pub graffiti: B256,
    /// Proposer slashings.
    pub proposer_slashings: VariableList<ProposerSlashing, U16>,
    /// Attester slashings.
    pub attester_slashings: VariableList<AttesterSlashing<U131072>, U1>,
    /// Attestations.
    pub attestations: VariableList<ElectraAttestation, U8>,
    /// Deposits.
    pub deposits: VariableList<Deposit, U16>,
    /// Voluntary exits.
    pub voluntary_exits: VariableList<SignedVoluntaryExit, U16>,
    /// The sync committee's signature over the parent block.
    pub sync_aggregate: SyncAggregate,
    /// The execution payload.
    pub execution_payload: ExecutionPayload,
    /// BLS-to-execution changes.
    pub bls_to_execution_changes: VariableList<SignedBlsToExecutionChange, U16>,
    /// Blob KZG commitments.
    pub blob_kzg_commitments: VariableList<BlsPublicKey, U4096>,
    /// Execution-layer requests.
    pub execution_requests: ExecutionRequests,
}

/// `BeaconBlock`, generic over the body.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct BeaconBlock<Body: Encode + Decode + TreeHash> {
    /// Slot.
    pub slot: u64,
    /// Proposer.
    pub proposer_index: u64,
    /// Parent block root.
    pub parent_root: B256,
    /// Post-state root.
    pub state_root: B256,
    /// Body.
    pub body: Body,
}

/// `SignedBeaconBlock`, generic over the body.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct SignedBeaconBlock<Body: Encode + Decode + TreeHash> {
    /// The block.
    pub message: BeaconBlock<Body>,
    /// The proposer's signature.
    pub signature: BlsSignature,
}

/// A decoded block of a supported fork.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyBlock {
    /// A Deneb block.
    Deneb(Box<SignedBeaconBlock<DenebBeaconBlockBody>>),
    /// An Electra or Fulu block.
    Electra(Box<SignedBeaconBlock<ElectraBeaconBlockBody>>),
}

/// The parts of a beacon block the light client uses, with its roots computed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSummary {
    /// The block's header (body root recomputed from the body).
    pub header: BeaconBlockHeader,
    /// `hash_tree_root(header)`.
    pub root: B256,
    /// The sync aggregate in this block's body (it signs the parent).
    pub sync_aggregate: SyncAggregate,
    /// Execution block number of the payload.
    pub execution_number: u64,
    /// Execution block hash of the payload.
    pub execution_hash: B256,
}

impl AnyBlock {
    /// Decodes an SSZ `SignedBeaconBlock`, choosing the fork by the block's slot (the first
    /// field of the message, which starts after the 4-byte offset and the 96-byte signature).
    pub fn from_ssz(spec: &ChainSpec, bytes: &[u8]) -> Result<Self, LightError> {
        const WHAT: &str = "SignedBeaconBlock";
        let slot = bytes
            .get(100..108)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
            .ok_or(LightError::Decode {
                what: WHAT,
                detail: "shorter than its slot".into(),
            })?;
        let fork = spec
            .lc_fork(slot)
            .ok_or(LightError::UnsupportedFork { what: WHAT, slot })?;
        let err = |e: ssz::DecodeError| LightError::Decode {
            what: WHAT,
            detail: format!("{e:?}"),
        };
        Ok(match fork {
            LcFork::Deneb => AnyBlock::Deneb(Box::new(
                SignedBeaconBlock::from_ssz_bytes(bytes).map_err(err)?,
            )),
            LcFork::Electra => AnyBlock::Electra(Box::new(
                SignedBeaconBlock::from_ssz_bytes(bytes).map_err(err)?,
            )),
        })
    }

    /// The block's parent root (read, not hashed).
    pub fn parent_root(&self) -> B256 {
        match self {
            AnyBlock::Deneb(b) => b.message.parent_root,
            AnyBlock::Electra(b) => b.message.parent_root,
        }
    }

    /// The sync aggregate in the block's body (read, not hashed).
    pub fn sync_aggregate(&self) -> &SyncAggregate {
        match self {
            AnyBlock::Deneb(b) => &b.message.body.sync_aggregate,
            AnyBlock::Electra(b) => &b.message.body.sync_aggregate,
        }
    }

    /// The block's header with `body_root`, the body's root computed by the caller (a prover
    /// that builds the body's tree anyway need not hash the body twice).
    pub fn header_with(&self, body_root: B256) -> BeaconBlockHeader {
        match self {
            AnyBlock::Deneb(b) => header_of(&b.message, body_root),
            AnyBlock::Electra(b) => header_of(&b.message, body_root),
        }
    }

    /// The block's header, roots and the fields the light client uses.
    pub fn summary(&self) -> BlockSummary {
        match self {
            AnyBlock::Deneb(b) => summarize(
                &b.message,
                b.message.body.tree_hash_root(),
                &b.message.body.sync_aggregate,
                &b.message.body.execution_payload,
            ),
            AnyBlock::Electra(b) => summarize(
                &b.message,
                b.message.body.tree_hash_root(),
                &b.message.body.sync_aggregate,
                &b.message.body.execution_payload,
            ),
        }
    }

    /// The execution payload.
    pub fn execution_payload(&self) -> &ExecutionPayload {
        match self {
            AnyBlock::Deneb(b) => &b.message.body.execution_payload,
            AnyBlock::Electra(b) => &b.message.body.execution_payload,
        }
    }
}

/// A block's header with the given body root.
fn header_of<Body: Encode + Decode + TreeHash>(
    block: &BeaconBlock<Body>,
    body_root: B256,
) -> BeaconBlockHeader {
    BeaconBlockHeader {
        slot: block.slot,
        proposer_index: block.proposer_index,
        parent_root: block.parent_root,
        state_root: block.state_root,
        body_root,
    }
}

fn summarize<Body: Encode + Decode + TreeHash>(
    block: &BeaconBlock<Body>,
    body_root: B256,
    sync_aggregate: &SyncAggregate,
    payload: &ExecutionPayload,
) -> BlockSummary {
    let header = header_of(block, body_root);
    BlockSummary {
        header,
        root: header.root(),
        sync_aggregate: sync_aggregate.clone(),
        execution_number: payload.block_number,
        execution_hash: payload.block_hash,
    }
}
