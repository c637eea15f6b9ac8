//! The colibri.stateless wire format as typed values: the `C4Request` container, its data,
//! proof and sync-data unions, and every proof container of the `eth_*` methods
//! (`shared/specs/colibri-proofs.md` §2–§5, §8), with SSZ decode and encode.
//!
//! Reused from the light client: `BeaconBlockHeader`, `SyncAggregate` (the signature_proof
//! option is exactly one), `ExecutionPayload`, the light-client bootstrap and update
//! containers. Not here: any check of what the values say (`verify` and its modules).
//!
//! sszgate's own option: `ProofUnion` selector 64, `LogsRangeProof` (eth_getLogs that shows
//! no log of the range was left out; colibri 1.1.19's `LogsProof` cannot).
//!
//! Options decoded as "no option" on purpose (documented differences from colibri):
//! data selectors 4, 7, 8, 9 (values a verifier builds, never a prover: accepting them is the
//! root of colibri's "injected block data" bug), the Gnosis execution payload (not a mainnet
//! payload), and ZK sync data (not specified well enough to verify).

use alloy_primitives::{Address, B256, FixedBytes, U256};
use ssz_types::typenum::{
    U8, U20, U64, U128, U256 as N256, U512, U1024, U4096, U1048576, U4194304, U1073741824,
};
use ssz_types::{BitVector, FixedVector, VariableList};
use sszgate_light::block::ExecutionPayload;
use sszgate_light::types::{
    BeaconBlockHeader, BlsPublicKey, BlsSignature, DenebLightClientBootstrap,
    DenebLightClientUpdate, ElectraLightClientBootstrap, ElectraLightClientUpdate, SyncAggregate,
};

use crate::ssz::{container, union};

/// `BigBytes`: a byte list of at most 2^30 bytes (raw transactions, Patricia nodes).
pub type BigBytes = VariableList<u8, U1073741824>;
/// A list of Patricia trie nodes, root first, at most `N` of them.
pub type TrieNodes<N> = VariableList<BigBytes, N>;
/// A multiproof or branch: 32-byte nodes, at most `N`.
pub type Nodes<N> = VariableList<B256, N>;

container! {
    /// `C4Request`: what a prover sends and a verifier checks.
    pub struct C4Request {
        /// `[chain_type, major, minor, patch]`; `00 00 01 00` for mainnet at this version.
        pub version: FixedBytes<4>,
        /// Result data the prover ships (receipts, logs, code), else `None`.
        pub data: DataUnion,
        /// The proof.
        pub proof: ProofUnion,
        /// Light-client sync data for a verifier that lacks committee keys.
        pub sync_data: SyncDataUnion,
    }
}

union! {
    /// `DataUnion` (§2.2), the options a prover may send; those of a method family left out
    /// are refused by name, as in `ProofUnion`.
    pub enum DataUnion {
        /// No data.
        None = 0,
        /// A 32-byte value.
        Hash(B256) = 1,
        /// Bytes (eth_getCode's code).
        Bytes(BigBytes) = 2 if "accounts",
        /// A number.
        Value(U256) = 3,
        /// A receipt (eth_getTransactionReceipt).
        Receipt(Box<EthReceiptData>) = 5,
        /// Logs (eth_getLogs).
        Logs(VariableList<Log, U1024>) = 6 if "logs",
    }
}

union! {
    /// `ProofUnion` (§2.3).
    pub enum ProofUnion {
        /// No proof (local methods).
        None = 0,
        /// Account methods.
        Account(Box<AccountProof>) = 1 if "accounts",
        /// eth_getTransactionBy*.
        Transaction(Box<TransactionProof>) = 2 if "transactions",
        /// eth_getTransactionReceipt.
        Receipt(Box<ReceiptProof>) = 3,
        /// eth_getLogs.
        Logs(VariableList<LogsBlock, N256>) = 4 if "logs",
        /// eth_call.
        Call(Box<CallProof>) = 5 if "call",
        /// Input of colibri's zk sync circuit (decoded by the server only, never verified).
        Sync(Box<SyncProof>) = 6 if "net",
        /// eth_getBlockBy*.
        Block(Box<BlockProof>) = 7 if "blocks",
        /// eth_blockNumber.
        BlockNumber(Box<BlockNumberProof>) = 8 if "blocks",
        /// A signed block-hash witness (decoded by the server only, never verified).
        Witness(Box<WitnessProof>) = 9 if "net",
        /// eth_getLogs with completeness: sszgate's own option (not colibri's; see
        /// `crates/proof/README.md`), a selector far from colibri's to stay clear of its later
        /// options.
        LogsRange(Box<LogsRangeProof>) = 64 if "logs",
    }
}

union! {
    /// `SyncDataUnion` (§2.4); the ZK option (2) is not accepted.
    pub enum SyncDataUnion {
        /// No sync data.
        None = 0,
        /// Light-client bootstrap and updates.
        LightClient(Box<LcSyncData>) = 1,
    }
}

container! {
    /// `ProofHeader`: a beacon header without its parent root (the verifier inserts it).
    pub struct ProofHeader {
        /// Slot.
        pub slot: u64,
        /// Proposer.
        pub proposer_index: u64,
        /// Post-state root.
        pub state_root: B256,
        /// Body root.
        pub body_root: B256,
    }
}

container! {
    /// `historic_proof`: the data header proven into a recent state's historical summaries.
    pub struct HistoricProof {
        /// Branch from the data header's root to `header.state_root`, leaf level first.
        pub proof: Nodes<U128>,
        /// The recent header the signature covers.
        pub header: BeaconBlockHeader,
        /// Generalized index of the data header's root in `header`'s state.
        pub gindex: u64,
        /// Who signed `header`.
        pub sync_committee_bits: BitVector<U512>,
        /// Their aggregate signature.
        pub sync_committee_signature: BlsSignature,
    }
}

container! {
    /// `header_proof`: the headers between the data block and a later signed one.
    pub struct HeaderChainProof {
        /// The headers strictly between, oldest (the data block's child) first.
        pub headers: VariableList<ProofHeader, U128>,
        /// The header the signature covers; its parent is the last of `headers`.
        pub header: BeaconBlockHeader,
        /// Who signed `header`.
        pub sync_committee_bits: BitVector<U512>,
        /// Their aggregate signature.
        pub sync_committee_signature: BlsSignature,
    }
}

union! {
    // The signature option, in every proof colibri's prover makes, stays inline.
    #[allow(clippy::large_enum_variant)]
    /// `HeaderProofUnion` (§3.2): how the data header is tied to a committee signature.
    pub enum HeaderProofUnion {
        /// The child block's sync aggregate, signing the data header itself.
        Signature(SyncAggregate) = 0,
        /// The data header inside a recent state's historical summaries.
        Historic(Box<HistoricProof>) = 1,
        /// A chain of headers up to a signed one.
        Headers(Box<HeaderChainProof>) = 2,
    }
}

union! {
    /// `StateBlockUnion`: which block identifier a state proof additionally proves.
    pub enum StateBlockUnion {
        /// A tag (`latest`, …): nothing more.
        None = 0,
        /// The execution block hash.
        Hash(B256) = 1,
        /// The execution block number.
        Number(u64) = 2,
    }
}

container! {
    /// `StateProof` (§3.3): the execution state root proven to a signed header.
    pub struct StateProof {
        /// The block identifier proven with it.
        pub block: StateBlockUnion,
        /// Multiproof of stateRoot (and blockHash or blockNumber) to `header.body_root`.
        pub proof: Nodes<N256>,
        /// The data block's header.
        pub header: BeaconBlockHeader,
        /// Its tie to a signature.
        pub header_proof: HeaderProofUnion,
    }
}

container! {
    /// `BlockNumberProof` (§4.1).
    pub struct BlockNumberProof {
        /// Execution block number.
        pub block_number: u64,
        /// Execution timestamp.
        pub timestamp: u64,
        /// Multiproof of both to `header.body_root`.
        pub proof: Nodes<N256>,
        /// The data block's header.
        pub header: BeaconBlockHeader,
        /// Its tie to a signature.
        pub header_proof: HeaderProofUnion,
    }
}

union! {
    /// `ExecutionPayloadUnion`: mainnet payloads only (the Gnosis option is refused).
    pub enum ExecutionPayloadUnion {
        /// The Deneb (= Electra = Fulu) payload.
        Deneb(ExecutionPayload) = 0,
    }
}

container! {
    /// `BlockProof` (§4.2): a whole execution payload.
    pub struct BlockProof {
        /// The payload.
        pub execution_payload: ExecutionPayloadUnion,
        /// Branch of the payload (body gindex 25) to `header.body_root`.
        pub proof: Nodes<N256>,
        /// The data block's header.
        pub header: BeaconBlockHeader,
        /// Its tie to a signature.
        pub header_proof: HeaderProofUnion,
    }
}

container! {
    /// `TransactionProof` (§4.3).
    pub struct TransactionProof {
        /// The raw EIP-2718 transaction.
        pub transaction: BigBytes,
        /// Its index in the block.
        pub transaction_index: u32,
        /// Execution block number.
        pub block_number: u64,
        /// Execution block hash.
        pub block_hash: B256,
        /// Base fee (for the rendered `gasPrice`).
        pub base_fee_per_gas: u64,
        /// Multiproof of the four to `header.body_root`.
        pub proof: Nodes<U64>,
        /// The data block's header.
        pub header: BeaconBlockHeader,
        /// Its tie to a signature.
        pub header_proof: HeaderProofUnion,
    }
}

container! {
    /// `ReceiptProof` (§4.4).
    pub struct ReceiptProof {
        /// The raw transaction.
        pub transaction: BigBytes,
        /// Its index in the block.
        pub transaction_index: u32,
        /// Execution block number.
        pub block_number: u64,
        /// Execution block hash.
        pub block_hash: B256,
        /// Patricia proof of the receipt in the receipts trie, root first.
        pub receipt_proof: TrieNodes<U64>,
        /// Multiproof of receiptsRoot, number, hash and the transaction to `header.body_root`.
        pub block_proof: Nodes<U64>,
        /// The data block's header.
        pub header: BeaconBlockHeader,
        /// Its tie to a signature.
        pub header_proof: HeaderProofUnion,
    }
}

container! {
    /// `LogsTx`: one transaction that emitted logs, with its receipt's Patricia proof.
    pub struct LogsTx {
        /// The raw transaction.
        pub transaction: BigBytes,
        /// Its index in the block.
        pub transaction_index: u32,
        /// Patricia proof of its receipt, root first.
        pub proof: TrieNodes<N256>,
    }
}

container! {
    /// `LogsBlock`: one block with logs.
    pub struct LogsBlock {
        /// Execution block number.
        pub block_number: u64,
        /// Execution block hash.
        pub block_hash: B256,
        /// Multiproof of number, hash, receiptsRoot and the transactions to `header.body_root`.
        pub proof: Nodes<U1024>,
        /// The data block's header.
        pub header: BeaconBlockHeader,
        /// Its tie to a signature.
        pub header_proof: HeaderProofUnion,
        /// The transactions that emitted logs.
        pub txs: VariableList<LogsTx, N256>,
    }
}

container! {
    /// `LogsRangeTx` (sszgate's own): a transaction whose receipt holds a matching log, which
    /// binds the logs' `transactionHash`.
    pub struct LogsRangeTx {
        /// The raw EIP-2718 transaction.
        pub transaction: BigBytes,
        /// Its index in the block.
        pub transaction_index: u32,
    }
}

container! {
    /// `LogsRangeBlock` (sszgate's own): one execution block of an eth_getLogs range, with
    /// every receipt when its bloom may match the filter.
    pub struct LogsRangeBlock {
        /// Execution block number.
        pub block_number: u64,
        /// Execution block hash.
        pub block_hash: B256,
        /// The parent's execution block hash.
        pub parent_hash: B256,
        /// The block's logs bloom.
        pub logs_bloom: FixedBytes<256>,
        /// Every receipt of the block, raw EIP-2718, in order, when the bloom may match the
        /// filter (their trie's root is proven as receiptsRoot); else empty.
        pub receipts: VariableList<BigBytes, U1048576>,
        /// The transactions of the receipts that hold matching logs, by ascending index.
        pub txs: VariableList<LogsRangeTx, U1048576>,
        /// Multiproof of number, hash, parent hash, bloom (and receiptsRoot and the
        /// transactions, when shipped) to `header.body_root`.
        pub proof: Nodes<U1024>,
        /// The block's beacon header.
        pub header: BeaconBlockHeader,
    }
}

container! {
    /// `LogsRangeProof` (sszgate's own, union selector 64): every block of an eth_getLogs
    /// range, oldest first, linked by parent roots; the newest tied to a signature.
    pub struct LogsRangeProof {
        /// The blocks, oldest first (at most 64).
        pub blocks: VariableList<LogsRangeBlock, U64>,
        /// The newest block's header tied to a signature.
        pub header_proof: HeaderProofUnion,
    }
}

container! {
    /// `StorageProof`: one slot's Patricia proof.
    pub struct StorageProof {
        /// The slot.
        pub key: B256,
        /// Patricia nodes of the storage trie, root first.
        pub proof: TrieNodes<U1024>,
    }
}

container! {
    /// `AccountProof` (§4.6).
    pub struct AccountProof {
        /// Patricia nodes of the state trie, root first.
        pub account_proof: TrieNodes<N256>,
        /// The account.
        pub address: Address,
        /// Storage slots.
        pub storage_proof: VariableList<StorageProof, N256>,
        /// The state root's proof.
        pub state_proof: StateProof,
    }
}

union! {
    /// `CodeUnion`: whether an eth_call account's code is needed, or the code itself.
    pub enum CodeUnion {
        /// `false`: no code; `true`: code needed but not shipped.
        Used(bool) = 0,
        /// The code.
        Code(VariableList<u8, U4194304>) = 1,
    }
}

container! {
    /// `EthCallAccount`: one account an eth_call touches.
    pub struct EthCallAccount {
        /// Patricia nodes of the state trie, root first.
        pub account_proof: TrieNodes<N256>,
        /// The account.
        pub address: Address,
        /// Its code, or whether it has any.
        pub code: CodeUnion,
        /// Storage slots read.
        pub storage_proof: VariableList<StorageProof, U4096>,
    }
}

container! {
    /// `CallProof` (§4.7).
    pub struct CallProof {
        /// Every account the call touches.
        pub accounts: VariableList<EthCallAccount, N256>,
        /// The state root's proof.
        pub state_proof: StateProof,
    }
}

container! {
    /// `SyncProof` (§4.8): input of colibri's zk sync circuit; decoded only.
    pub struct SyncProof {
        /// The old committee.
        pub old_keys: FixedVector<BlsPublicKey, U512>,
        /// The new committee.
        pub new_keys: FixedVector<BlsPublicKey, U512>,
        /// Who signed.
        pub sync_committee_bits: BitVector<U512>,
        /// Their signature.
        pub sync_committee_signature: BlsSignature,
        /// Generalized index of the proof.
        pub gidx: u64,
        /// Slot.
        pub slot: u64,
        /// Proposer.
        pub proposer_index: u64,
        /// Branch.
        pub proof: Nodes<N256>,
    }
}

container! {
    /// `BlockHashWitness` (§4.8); decoded only.
    pub struct BlockHashWitness {
        /// Chain id.
        pub chain_id: u64,
        /// Block number.
        pub block_number: u64,
        /// Block hash.
        pub block_hash: B256,
        /// State root.
        pub state_root: B256,
        /// Receipts root.
        pub receipts_root: B256,
        /// Transactions root.
        pub transactions_root: B256,
    }
}

union! {
    /// The witness data union (one option).
    pub enum WitnessData {
        /// A block-hash witness.
        BlockHash(BlockHashWitness) = 0,
    }
}

container! {
    /// `WitnessProof` (§4.8): a secp256k1-signed witness; decoded only.
    pub struct WitnessProof {
        /// What is witnessed.
        pub data: WitnessData,
        /// The witness's signature.
        pub signature: FixedBytes<65>,
    }
}

container! {
    /// `Log` (§5.2), as the node's JSON renders it.
    pub struct Log {
        /// Block hash.
        pub block_hash: B256,
        /// Block number.
        pub block_number: u64,
        /// Hash of the emitting transaction.
        pub transaction_hash: B256,
        /// Its index.
        pub transaction_index: u32,
        /// Emitting contract.
        pub address: Address,
        /// Position in the block.
        pub log_index: u32,
        /// Removed by a reorg.
        pub removed: bool,
        /// Topics.
        pub topics: Nodes<U8>,
        /// Data.
        pub data: BigBytes,
    }
}

container! {
    /// `EthReceiptData` (§5.2): the receipt a prover ships for eth_getTransactionReceipt.
    pub struct EthReceiptData {
        /// Bit `i` set: field `i` is shown (0: all).
        pub optmask: u32,
        /// Block hash.
        pub block_hash: B256,
        /// Block number.
        pub block_number: u64,
        /// Transaction hash.
        pub transaction_hash: B256,
        /// Transaction index.
        pub transaction_index: u32,
        /// Transaction type.
        pub tx_type: u8,
        /// Sender.
        pub from: Address,
        /// Recipient (empty for a creation).
        pub to: VariableList<u8, U20>,
        /// Cumulative gas used in the block up to this transaction.
        pub cumulative_gas_used: u64,
        /// Gas used by this transaction.
        pub gas_used: u64,
        /// Logs.
        pub logs: VariableList<Log, N256>,
        /// Bloom filter of the logs.
        pub logs_bloom: FixedBytes<256>,
        /// 1 success, 0 failure.
        pub status: u8,
        /// Price paid per gas.
        pub effective_gas_price: u64,
        /// OP deposit nonce.
        pub deposit_nonce: u64,
        /// OP deposit receipt version.
        pub deposit_receipt_version: u32,
    }
}

union! {
    // Boxing the light client's containers is not possible here (foreign types); a bootstrap
    // is decoded once per proof at most.
    #[allow(clippy::large_enum_variant)]
    /// A light-client bootstrap by fork (§8.1): Deneb is 1, Electra 2.
    pub enum BootstrapUnion {
        /// No bootstrap.
        None = 0,
        /// Deneb.
        Deneb(DenebLightClientBootstrap) = 1,
        /// Electra (and Fulu).
        Electra(ElectraLightClientBootstrap) = 2,
    }
}

union! {
    #[allow(clippy::large_enum_variant)]
    /// A light-client update by fork (§8.1): Deneb is 0, Electra 1.
    pub enum UpdateUnion {
        /// Deneb.
        Deneb(DenebLightClientUpdate) = 0,
        /// Electra (and Fulu).
        Electra(ElectraLightClientUpdate) = 1,
    }
}

container! {
    /// `LCSyncData` (§8.1).
    pub struct LcSyncData {
        /// A bootstrap for the verifier's trusted checkpoint.
        pub bootstrap: BootstrapUnion,
        /// Updates, oldest first.
        pub update: VariableList<UpdateUnion, U1024>,
    }
}
