//! Transaction load for the driven chain: plain transfers and blob transactions from funded
//! development keys, sent to the EL's public JSON-RPC (`eth_sendRawTransaction`).
//!
//! Blob transactions carry real mainnet blobs from the data set, with their commitments and
//! proofs (EIP-4844 blob proofs before Osaka, 128 cell proofs per blob from Osaka on, as
//! EIP-7594 wraps them). Every transaction is signed deterministically (RFC 6979), so the same
//! chain, keys and load give the same transactions byte for byte. Nothing here talks to the
//! Engine API.

use std::time::Duration;

use alloy_consensus::{
    SignableTransaction, TxEip1559, TxEip4844, TxEip4844WithSidecar,
    transaction::RlpEcdsaEncodableTx,
};
use alloy_eips::{
    eip2718::Encodable2718,
    eip4844::BlobTransactionSidecar,
    eip7594::{BlobTransactionSidecarEip7594, BlobTransactionSidecarVariant},
};
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use bytes::Bytes as HttpBytes;
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};
use sszgate_engine::Fork;
use sszgate_fixtures::BlobItem;

use crate::DriveError;

/// Public development keys (the well-known first two keys of the common test mnemonic), funded
/// in the devnet genesis: the first sends transfers, the second blob transactions (an account
/// with blob transactions pending may hold no other kind). Never use them for real funds.
pub const DEV_KEYS: [&str; 2] = [
    "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
];

/// The most blobs one transaction may carry from Osaka on (EIP-7594).
pub const MAX_BLOBS_PER_TX: usize = 6;

const GWEI: u128 = 1_000_000_000;

/// The two accounts the load is sent from: transfers from one, blob transactions from the
/// other (an account with a blob transaction pending may hold no other kind).
#[derive(Clone, Debug)]
pub struct Senders {
    transfers: PrivateKeySigner,
    blobs: PrivateKeySigner,
}

impl Senders {
    /// The public development keys ([`DEV_KEYS`]), funded in a devnet's genesis.
    pub fn dev() -> Senders {
        Senders::from_keys(&DEV_KEYS.map(str::to_string)).expect("the dev keys are valid")
    }

    /// Two hex private keys (with or without `0x`): transfers from the first, blobs from the
    /// second; one key serves both when the load has only one kind.
    pub fn from_keys(keys: &[String]) -> Result<Senders, DriveError> {
        let parse = |(i, key): (usize, &String)| {
            key.trim().parse::<PrivateKeySigner>().map_err(|_| {
                DriveError::Config(format!("key {} is not a 32-byte hex private key", i + 1))
            })
        };
        let signers = keys
            .iter()
            .enumerate()
            .map(parse)
            .collect::<Result<Vec<_>, _>>()?;
        match signers.as_slice() {
            [one] => Ok(Senders {
                transfers: one.clone(),
                blobs: one.clone(),
            }),
            [transfers, blobs] => Ok(Senders {
                transfers: transfers.clone(),
                blobs: blobs.clone(),
            }),
            other => Err(DriveError::Config(format!(
                "{} keys given: the load is sent from one or two accounts",
                other.len()
            ))),
        }
    }

    /// Two consecutive accounts of a BIP-39 `mnemonic` (`m/44'/60'/0'/0/index` and the next).
    pub fn from_mnemonic(mnemonic: &str, index: u32) -> Result<Senders, DriveError> {
        let derive = |i: u32| {
            alloy_signer_local::MnemonicBuilder::<alloy_signer_local::coins_bip39::English>::default()
                .phrase(mnemonic.trim())
                .index(i)
                .and_then(|b| b.build())
                .map_err(|e| DriveError::Config(format!("mnemonic, account {i}: {e}")))
        };
        Ok(Senders {
            transfers: derive(index)?,
            blobs: derive(index + 1)?,
        })
    }

    /// The accounts' addresses: transfers, blobs.
    pub fn addresses(&self) -> (Address, Address) {
        (self.transfers.address(), self.blobs.address())
    }

    /// `call` signed by the transfers account.
    pub fn sign(&self, call: Call) -> PreparedTx {
        call.sign(&self.transfers)
    }
}

/// How many transactions of each kind go into every block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadShape {
    /// Plain ETH transfers per block.
    pub transfers: usize,
    /// Blob transactions per block.
    pub blob_txs: usize,
    /// Blobs in each blob transaction (1 to [`MAX_BLOBS_PER_TX`]).
    pub blobs_per_tx: usize,
}

impl LoadShape {
    /// Blobs per block under this shape.
    pub fn blobs_per_block(&self) -> usize {
        self.blob_txs * self.blobs_per_tx
    }
}

/// The EL's public JSON-RPC endpoint (no JWT), for the few `eth_` calls the load needs.
pub struct EthRpc {
    url: String,
    http: Client<HttpConnector, Full<HttpBytes>>,
}

impl EthRpc {
    /// A client for `url` (e.g. `http://127.0.0.1:8545`).
    pub fn new(url: &str) -> EthRpc {
        EthRpc {
            url: url.to_string(),
            http: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// Calls `method` with `params`; the `result`, or an error naming the call.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, DriveError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = http::Request::post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(HttpBytes::from(body.to_string())))
            .expect("a well-formed request");
        let unreachable = |problem: String| DriveError::Unreachable {
            method: method.to_string(),
            url: self.url.clone(),
            problem,
        };
        let response = tokio::time::timeout(Duration::from_secs(30), self.http.request(request))
            .await
            .map_err(|_| unreachable("no answer within 30 s".into()))?
            .map_err(|e| unreachable(e.to_string()))?;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| unreachable(e.to_string()))?
            .to_bytes();
        json_rpc_result(method, status, &bytes)
    }

    /// A quantity-valued call (`eth_chainId`, `eth_getTransactionCount`, …) as a number.
    pub async fn quantity(&self, method: &str, params: Value) -> Result<u64, DriveError> {
        let value = self.call(method, params).await?;
        value
            .as_str()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .ok_or_else(|| DriveError::Answer {
                method: method.to_string(),
                problem: format!("expected a hex quantity, got {value}"),
            })
    }
}

/// One account sending transactions: its key and next nonce.
struct Sender {
    signer: PrivateKeySigner,
    nonce: u64,
}

/// A signed transaction ready to send, with what the block it lands in must show for it.
#[derive(Clone, Debug)]
pub struct PreparedTx {
    /// The network encoding (with the blob sidecar for blob transactions).
    pub raw: Bytes,
    /// The transaction hash.
    pub hash: B256,
    /// The blob versioned hashes it carries (empty for transfers).
    pub versioned_hashes: Vec<B256>,
}

/// Builds and signs the load, block after block, from the dev keys and the real blobs.
pub struct Load {
    chain_id: u64,
    fork: Fork,
    shape: LoadShape,
    transfers: Sender,
    blobs: Sender,
    blob_items: Vec<BlobItem>,
    next_blob: usize,
}

impl Load {
    /// A load of `shape` on chain `chain_id` under `fork`, sent from `senders`, starting at
    /// the accounts' nonces as the EL reports them; blobs are taken in turn from `blob_items`.
    /// An account with no funds is refused here, naming it, rather than at its first
    /// transaction.
    pub async fn new(
        eth: &EthRpc,
        fork: Fork,
        shape: LoadShape,
        blob_items: Vec<BlobItem>,
        senders: Senders,
    ) -> Result<Load, DriveError> {
        if shape.blob_txs > 0 && !(1..=MAX_BLOBS_PER_TX).contains(&shape.blobs_per_tx) {
            return Err(DriveError::Config(format!(
                "blobs per transaction must be 1 to {MAX_BLOBS_PER_TX}, not {}",
                shape.blobs_per_tx
            )));
        }
        if shape.blob_txs > 0 && blob_items.is_empty() {
            return Err(DriveError::Config(
                "blob transactions asked for, but the data set holds no blobs".into(),
            ));
        }
        if shape.blob_txs > 0 && !fork.has_blobs() {
            return Err(DriveError::Config(format!("{fork} has no blobs")));
        }
        let chain_id = eth.quantity("eth_chainId", json!([])).await?;
        let used = [
            (shape.transfers > 0, &senders.transfers, "transfers"),
            (shape.blob_txs > 0, &senders.blobs, "blob transactions"),
        ];
        if shape.transfers > 0
            && shape.blob_txs > 0
            && senders.transfers.address() == senders.blobs.address()
        {
            return Err(DriveError::Config(
                "transfers and blob transactions need two accounts (one with a blob transaction pending may send nothing else): give two keys".into(),
            ));
        }
        for (needed, signer, what) in used {
            // A balance may exceed 64 bits: only its being zero matters here.
            let balance = eth
                .call("eth_getBalance", json!([signer.address(), "latest"]))
                .await?;
            if needed
                && balance.as_str().is_some_and(|b| {
                    b.trim_start_matches("0x")
                        .trim_start_matches('0')
                        .is_empty()
                })
            {
                return Err(DriveError::Config(format!(
                    "the account sending {what}, {}, has no funds on this chain: give a funded key (--key, --key-file or --mnemonic)",
                    signer.address()
                )));
            }
        }
        let nonce = |signer: &PrivateKeySigner| {
            eth.quantity(
                "eth_getTransactionCount",
                json!([signer.address(), "pending"]),
            )
        };
        let transfers = Sender {
            nonce: nonce(&senders.transfers).await?,
            signer: senders.transfers,
        };
        let blobs = Sender {
            nonce: nonce(&senders.blobs).await?,
            signer: senders.blobs,
        };
        Ok(Load {
            chain_id,
            fork,
            shape,
            transfers,
            blobs,
            blob_items,
            next_blob: 0,
        })
    }

    /// The shape of the load.
    pub fn shape(&self) -> LoadShape {
        self.shape
    }

    /// The transactions for the next block: the transfers, then the blob transactions.
    pub fn next_block(&mut self) -> Vec<PreparedTx> {
        let mut out = Vec::with_capacity(self.shape.transfers + self.shape.blob_txs);
        for _ in 0..self.shape.transfers {
            out.push(self.transfer());
        }
        for _ in 0..self.shape.blob_txs {
            out.push(self.blob_tx());
        }
        out
    }

    fn transfer(&mut self) -> PreparedTx {
        let nonce = self.transfers.nonce;
        self.transfers.nonce += 1;
        let call = Call {
            chain_id: self.chain_id,
            nonce,
            to: Some(recipient(nonce)),
            value: U256::from(GWEI),
            input: Bytes::new(),
            gas_limit: 21_000,
        };
        call.sign(&self.transfers.signer)
    }

    fn blob_tx(&mut self) -> PreparedTx {
        let nonce = self.blobs.nonce;
        self.blobs.nonce += 1;
        let items: Vec<&BlobItem> = (0..self.shape.blobs_per_tx)
            .map(|i| &self.blob_items[(self.next_blob + i) % self.blob_items.len()])
            .collect();
        self.next_blob += items.len();
        let versioned_hashes: Vec<B256> = items
            .iter()
            .map(|b| sszgate_fixtures::versioned_hash(&b.commitment))
            .collect();
        let blobs = items.iter().map(|b| b.blob).collect();
        let commitments = items.iter().map(|b| b.commitment).collect();
        let sidecar = if self.fork.has_cell_proofs() {
            BlobTransactionSidecarVariant::Eip7594(BlobTransactionSidecarEip7594 {
                blobs,
                commitments,
                cell_proofs: items.iter().flat_map(|b| b.cell_proofs.clone()).collect(),
            })
        } else {
            BlobTransactionSidecarVariant::Eip4844(BlobTransactionSidecar {
                blobs,
                commitments,
                proofs: items.iter().map(|b| b.proof).collect(),
            })
        };
        let tx = TxEip4844 {
            chain_id: self.chain_id,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: 100 * GWEI,
            max_priority_fee_per_gas: GWEI,
            to: recipient(u64::MAX - nonce),
            value: U256::ZERO,
            blob_versioned_hashes: versioned_hashes.clone(),
            max_fee_per_blob_gas: 1_000 * GWEI,
            ..TxEip4844::default()
        };
        // The hash is the one of the transaction without its sidecar: what the block holds.
        let (raw, hash) = sign(
            &self.blobs.signer,
            TxEip4844WithSidecar::from_tx_and_sidecar(tx, sidecar),
        );
        PreparedTx {
            raw,
            hash,
            versioned_hashes,
        }
    }
}

/// An EIP-1559 call, or a contract creation when `to` is `None` (100 gwei fee cap, 1 gwei
/// tip).
#[derive(Clone, Debug)]
pub struct Call {
    /// The chain's id.
    pub chain_id: u64,
    /// The sender's nonce.
    pub nonce: u64,
    /// The account called; `None` creates a contract from `input`.
    pub to: Option<Address>,
    /// Wei sent.
    pub value: U256,
    /// Call data or init code.
    pub input: Bytes,
    /// The gas limit.
    pub gas_limit: u64,
}

impl Call {
    fn sign(self, signer: &PrivateKeySigner) -> PreparedTx {
        let tx = TxEip1559 {
            chain_id: self.chain_id,
            nonce: self.nonce,
            gas_limit: self.gas_limit,
            max_fee_per_gas: 100 * GWEI,
            max_priority_fee_per_gas: GWEI,
            to: self.to.map_or(TxKind::Create, TxKind::Call),
            value: self.value,
            input: self.input,
            ..TxEip1559::default()
        };
        let (raw, hash) = sign(signer, tx);
        PreparedTx {
            raw,
            hash,
            versioned_hashes: Vec::new(),
        }
    }
}

/// Signs `tx` with `signer`: its EIP-2718 network encoding and its hash.
fn sign<T>(signer: &PrivateKeySigner, tx: T) -> (Bytes, B256)
where
    T: SignableTransaction<alloy_primitives::Signature>
        + RlpEcdsaEncodableTx
        + alloy_eips::Typed2718
        + Send
        + Sync,
{
    let signature = signer
        .sign_hash_sync(&tx.signature_hash())
        .expect("signing with a valid key");
    let signed = tx.into_signed(signature);
    (signed.encoded_2718().into(), *signed.hash())
}

/// A deterministic recipient per transaction.
fn recipient(n: u64) -> Address {
    let mut bytes = [0x5a_u8; 20];
    bytes[12..].copy_from_slice(&n.to_be_bytes());
    Address::from(bytes)
}

/// Sends `txs` to the EL and waits until its pool holds every one of them (so the next payload
/// can include them); fails naming the transaction the EL refused. Some ELs (the ethereumjs
/// client) never show pending transactions by hash: when the first one stays hidden for 2 s,
/// `pool_visible` turns false with a warning, and later blocks only wait for acceptance (what
/// a block leaves out is counted in its report).
pub async fn submit(
    eth: &EthRpc,
    txs: &[PreparedTx],
    pool_visible: &mut bool,
) -> Result<(), DriveError> {
    for tx in txs {
        let hash = eth
            .call("eth_sendRawTransaction", json!([tx.raw]))
            .await
            .map_err(|e| DriveError::Load(format!("transaction {}: {e}", tx.hash)))?;
        if hash.as_str() != Some(&tx.hash.to_string()) {
            return Err(DriveError::Load(format!(
                "eth_sendRawTransaction answered {hash} for transaction {}",
                tx.hash
            )));
        }
    }
    if !*pool_visible {
        return Ok(());
    }
    for tx in txs {
        let mut seen = false;
        for _ in 0..100 {
            if !eth
                .call("eth_getTransactionByHash", json!([tx.hash]))
                .await?
                .is_null()
            {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !seen && tx.hash == txs[0].hash {
            eprintln!(
                "warning: the EL does not show pending transactions by hash; not waiting for its pool"
            );
            *pool_visible = false;
            return Ok(());
        }
        if !seen {
            return Err(DriveError::Load(format!(
                "transaction {} was accepted but never showed in the pool",
                tx.hash
            )));
        }
    }
    Ok(())
}

/// The `result` of a JSON-RPC answer, or its error as a [`DriveError`] naming `method`.
fn json_rpc_result(method: &str, status: u16, body: &[u8]) -> Result<Value, DriveError> {
    let mut envelope: Value = serde_json::from_slice(body).map_err(|_| DriveError::Http {
        method: method.to_string(),
        status,
        body: snippet(body),
    })?;
    if let Some(error) = envelope.get("error").filter(|e| !e.is_null()) {
        return Err(DriveError::Rpc {
            method: method.to_string(),
            code: error["code"].as_i64().unwrap_or(0),
            message: error["message"].as_str().unwrap_or("").to_string(),
        });
    }
    match envelope.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(DriveError::Answer {
            method: method.to_string(),
            problem: "a JSON-RPC answer with neither result nor error".into(),
        }),
    }
}

/// The start of a body, as text, for error messages.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    if body.len() > 300 {
        format!("{text}…")
    } else {
        text
    }
}

#[cfg(test)]
mod sender_tests {
    use super::*;

    const TEST_MNEMONIC: &str = "test test test test test test test test test test test junk";

    #[test]
    fn the_test_mnemonic_gives_the_dev_accounts() {
        let dev = Senders::dev().addresses();
        assert_eq!(
            Senders::from_mnemonic(TEST_MNEMONIC, 0)
                .unwrap()
                .addresses(),
            dev
        );
        assert_eq!(
            dev.0.to_string(),
            "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
            "the well-known first account"
        );
        let shifted = Senders::from_mnemonic(TEST_MNEMONIC, 1)
            .unwrap()
            .addresses();
        assert_eq!(shifted.0, dev.1);
    }

    #[test]
    fn keys_are_one_or_two_and_each_is_checked() {
        let one = Senders::from_keys(&[format!("0x{}", DEV_KEYS[0])]).unwrap();
        assert_eq!(one.addresses().0, one.addresses().1);
        let err = Senders::from_keys(&["0x1234".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("key 1 is not"), "{err}");
        let three = vec![DEV_KEYS[0].to_string(); 3];
        assert!(
            Senders::from_keys(&three)
                .unwrap_err()
                .to_string()
                .contains("3 keys")
        );
        assert!(Senders::from_mnemonic("not a mnemonic", 0).is_err());
    }
}
