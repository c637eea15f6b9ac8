//! `sszgate verify`: the proxy's checks on saved messages — a newPayload request, a getPayload
//! answer, a getBlobs answer — in JSON-RPC or REST-SSZ form, one verdict per file.

use std::path::PathBuf;

use alloy_primitives::B256;
use anyhow::{Context, Result, bail};
use clap::Args;
use sszgate_engine::{Message, MessageKind, scan};
use sszgate_verify::{Failure, blobs, payload};

use crate::{
    convert::{Form, decode, guess_form, resolve_message},
    flags::MessageForkArg,
};

/// Arguments of `sszgate verify`.
#[derive(Debug, Args)]
#[command(after_help = "\
A file holding a whole JSON-RPC request ({\"method\": …, \"params\": …}) needs no --message.

Examples:
  sszgate verify --message engine_newPayloadV4 params.json
  sszgate verify request.json                       # a saved JSON-RPC newPayload request
  sszgate verify --message built-payload --fork osaka --parent-beacon-block-root 0x… body.ssz
  sszgate verify --message engine_getBlobsV2 --response --versioned-hashes 0x…,0x… answer.json")]
pub(crate) struct VerifyArgs {
    /// The message: a JSON-RPC method name (with --response for its result) or a message name
    /// (new-payload, built-payload, blobs-response).
    #[arg(short, long)]
    message: Option<String>,

    #[command(flatten)]
    fork: MessageForkArg,

    /// With a method name: the files hold its result rather than its params.
    #[arg(long)]
    response: bool,

    /// For a getPayload answer: the parent beacon block root of the attributes that started
    /// the build (needed for the block hash from Cancun on; without it the hash is not checked).
    #[arg(long)]
    parent_beacon_block_root: Option<B256>,

    /// For a getBlobs answer: the versioned hashes asked for, comma separated, in order.
    #[arg(long, value_delimiter = ',')]
    versioned_hashes: Vec<B256>,

    /// The files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub(crate) fn run(args: VerifyArgs) -> Result<()> {
    // alloy's blob type is a 128 KiB array moved by value; give the decoders room.
    let failed = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || -> Result<usize> {
            let mut failed = 0;
            for file in &args.files {
                match verify_file(&args, file)? {
                    Ok(what) => println!("{}: ok ({what})", file.display()),
                    Err(failure) => {
                        failed += 1;
                        println!("{}: FAILED {failure}", file.display());
                    }
                }
            }
            Ok(failed)
        })
        .context("starting the verifier thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the verifier thread panicked"))??;
    if failed > 0 {
        bail!("{failed} of the files failed verification");
    }
    Ok(())
}

/// Decodes `file` and runs the checks that apply: what passed, or the failure.
fn verify_file(
    args: &VerifyArgs,
    file: &std::path::Path,
) -> Result<std::result::Result<String, Failure>> {
    let input = crate::input::read(Some(file))?;
    let form = guess_form(&input);
    // A whole JSON-RPC request names its method; its params are the message.
    let envelope = (form == Form::Json)
        .then(|| scan::envelope(&input))
        .flatten()
        .filter(|e| e.method.is_some() && e.params.is_some());
    let (name, body, response) = match (&args.message, envelope) {
        (Some(name), _) => (name.clone(), &input[..], args.response),
        (None, Some(e)) => (
            e.method.expect("filtered").to_string(),
            e.params.expect("filtered"),
            false,
        ),
        (None, None) => bail!(
            "{}: not a JSON-RPC request; say what it holds with --message",
            file.display()
        ),
    };
    let fork = args.fork.or_latest_for(&name)?;
    let (m, kind) = resolve_message(&name, response, None, fork)?;
    let message = decode(m, fork, kind, form, body).with_context(|| {
        format!(
            "decoding {} ({}, {kind}, fork {fork})",
            file.display(),
            m.name
        )
    })?;
    let kzg = c_kzg::ethereum_kzg_settings(0);
    Ok(match (kind, &message) {
        (MessageKind::NewPayload, Message::NewPayload(np)) => payload::check_new_payload(np)
            .map(|()| "block hash, transactions, limits, versioned hashes".to_string()),
        (MessageKind::BuiltPayload, Message::BuiltPayload(built)) => {
            payload::check_built(built, args.parent_beacon_block_root).and_then(|hashed| {
                blobs::check_bundle(Some(kzg), built)?;
                Ok(format!(
                    "{}transactions, limits, bundle commitments and proofs ({} blobs)",
                    if hashed {
                        "block hash, "
                    } else {
                        "block hash NOT checked (no --parent-beacon-block-root), "
                    },
                    built.blob_count()
                ))
            })
        }
        (MessageKind::Blobs, Message::Blobs(answer)) => {
            if args.versioned_hashes.is_empty() {
                bail!(
                    "a getBlobs answer is checked against the hashes asked for: give --versioned-hashes"
                );
            }
            blobs::check_answer(kzg, &args.versioned_hashes, answer, true)
                .map(|_| "blobs match the hashes asked for, proofs verify".to_string())
        }
        _ => bail!(
            "{kind} has nothing to verify (newPayload params, getPayload and getBlobs results do)"
        ),
    })
}
