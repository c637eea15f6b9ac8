//! `sszgate prove`: builds the colibri.stateless SSZ proof (`C4Request`) of one `eth_*`
//! request from an execution RPC and a Beacon API (`sszgate-proof`'s prover) and writes it.
//!
//! Parameters are given one per argument, each as JSON (`false`, `["0x1"]`, `{"to":…}`) or,
//! when not JSON, as a string (`latest`, `0x…`).

use std::{io::Write, path::PathBuf, time::Duration};

use anyhow::{Context, Result};
use clap::Args;
use serde_json::Value;
use sszgate_proof::prover::Prover;

/// `sszgate prove`.
#[derive(Args, Debug, Clone)]
pub(crate) struct ProveArgs {
    /// The method (eth_blockNumber, eth_getBlockByNumber, eth_getBlockByHash,
    /// eth_getTransactionByHash, eth_getTransactionReceipt, eth_getLogs, eth_getBalance,
    /// eth_getTransactionCount, eth_getStorageAt, eth_getCode, eth_getProof, eth_call).
    method: String,
    /// Its parameters, one per argument: JSON, or a plain string.
    params: Vec<String>,
    /// The execution JSON-RPC the proof is built from.
    #[arg(long, env = "SSZGATE_PROVE_EXECUTION", value_name = "URL")]
    execution: String,
    /// The Beacon API the proof is built from.
    #[arg(long, env = "SSZGATE_PROVE_BEACON", value_name = "URL")]
    beacon: String,
    /// eth_call: put the code of the accounts the call runs into the proof.
    #[arg(long)]
    include_code: bool,
    /// Where to write the proof (`-`: standard output).
    #[arg(long, short, default_value = "-")]
    out: PathBuf,
    /// Timeout of one upstream request.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    upstream_timeout: Duration,
}

/// The JSON params array of the arguments: each as JSON, else as a string.
pub(crate) fn params(args: &[String]) -> Value {
    Value::Array(
        args.iter()
            .map(|a| serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.clone())))
            .collect(),
    )
}

pub(crate) fn run(args: ProveArgs) -> Result<()> {
    crate::runtime()?.block_on(async {
        let mut prover = Prover::new(&args.execution, &args.beacon, args.upstream_timeout)?;
        prover.include_code = args.include_code;
        let proof = prover
            .prove(&args.method, &params(&args.params))
            .await
            .with_context(|| format!("proving {}", args.method))?;
        if args.out.as_os_str() == "-" {
            std::io::stdout().write_all(&proof)?;
        } else {
            std::fs::write(&args.out, &proof)
                .with_context(|| format!("writing {}", args.out.display()))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_json_or_strings() {
        let args = ["latest", "false", "0x1f", "[\"0x1\"]"].map(String::from);
        let v = params(&args);
        assert_eq!(v, serde_json::json!(["latest", false, "0x1f", ["0x1"]]));
    }
}
