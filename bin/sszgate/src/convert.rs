//! `sszgate convert` and `sszgate methods`: one message between its JSON-RPC and REST forms,
//! and the method table, for people debugging a capture or writing a client.

use std::{
    io::{self, IsTerminal, Write},
    path::PathBuf,
};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};

use crate::flags::MessageForkArg;
use sszgate_engine::{
    Fork, METHODS, Message, MessageKind, MethodSpec,
    method::{self, Family},
};

/// The encodings `convert` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Form {
    /// JSON-RPC: the params array of a request, the result of an answer.
    Json,
    /// REST body bytes (SSZ; JSON for capabilities and identity).
    Ssz,
    /// REST body bytes as 0x-hex text.
    Hex,
}

/// Arguments of `sszgate convert`.
#[derive(Debug, Args)]
#[command(after_help = "\
Messages: new-payload, payload-status, forkchoice, forkchoice-response, built-payload,
bodies-by-hash, bodies, blobs-request, blobs-response, capabilities, client-version,
or a JSON-RPC method name (engine_getPayloadV5 …), which picks the version too.

Examples:
  sszgate convert --message engine_newPayloadV4 --fork prague params.json > envelope.ssz
  sszgate convert --message built-payload --fork osaka --to json body.ssz
  curl … | sszgate convert --message payload-status --from hex")]
pub(crate) struct ConvertArgs {
    /// The message: a name from the list below or a JSON-RPC method name.
    #[arg(short, long, env = "SSZGATE_MESSAGE")]
    message: String,

    #[command(flatten)]
    fork: MessageForkArg,

    /// For blobs messages named without a method: the /blobs/vN revision.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=4))]
    blobs_version: Option<u8>,

    /// With a method name: convert its result rather than its params.
    #[arg(long)]
    response: bool,

    /// The input encoding; by default guessed: JSON if it starts with `[`, `{` or `"`, hex if
    /// it is 0x-hex text, SSZ bytes otherwise.
    #[arg(long, value_enum)]
    from: Option<Form>,

    /// The output encoding; by default the other side: JSON for SSZ or hex input, and for JSON
    /// input SSZ bytes (hex when stdout is a terminal).
    #[arg(long, value_enum)]
    to: Option<Form>,

    /// The input file; standard input when absent or `-`.
    file: Option<PathBuf>,
}

/// Resolves the method row and the message kind a `--message` value names.
fn resolve(args: &ConvertArgs, fork: Fork) -> Result<(&'static MethodSpec, MessageKind)> {
    resolve_message(&args.message, args.response, args.blobs_version, fork)
}

/// The method row and message kind of a message name or JSON-RPC method name (`response`:
/// its result rather than its params; `blobs_version`: the /blobs/vN of a blobs message).
pub(crate) fn resolve_message(
    message: &str,
    response: bool,
    blobs_version: Option<u8>,
    fork: Fork,
) -> Result<(&'static MethodSpec, MessageKind)> {
    if message.starts_with("engine_") {
        let m = method::by_name(message)?;
        let bodiless = matches!(
            m.request,
            MessageKind::PayloadId | MessageKind::BodiesByRangeRequest
        );
        let kind = if response || bodiless {
            m.response
        } else {
            m.request
        };
        return Ok((m, kind));
    }
    let kind = MessageKind::from_name(message).with_context(|| {
        let names: Vec<_> = MessageKind::ALL.iter().map(|k| k.name()).collect();
        format!(
            "unknown message {:?} (expected a JSON-RPC method or one of {})",
            message,
            names.join(", ")
        )
    })?;
    let family = match kind {
        MessageKind::NewPayload | MessageKind::PayloadStatus => Family::NewPayload,
        MessageKind::Forkchoice | MessageKind::ForkchoiceResponse => Family::ForkchoiceUpdated,
        MessageKind::PayloadId | MessageKind::BuiltPayload => Family::GetPayload,
        MessageKind::BodiesByHashRequest | MessageKind::Bodies => Family::BodiesByHash,
        MessageKind::BodiesByRangeRequest => Family::BodiesByRange,
        MessageKind::BlobsRequest | MessageKind::Blobs => {
            let name = match blobs_version {
                Some(v) => format!("engine_getBlobsV{v}"),
                None => method::for_fork(Family::GetBlobs, fork)
                    .map(|m| m.name.to_string())
                    .unwrap_or_else(|| "engine_getBlobsV1".into()),
            };
            return Ok((method::by_name(&name)?, kind));
        }
        MessageKind::Capabilities => Family::ExchangeCapabilities,
        MessageKind::ClientVersion => Family::GetClientVersion,
    };
    let m = method::for_fork(family, fork)
        .with_context(|| format!("no {kind} method serves fork {fork}"))?;
    Ok((m, kind))
}

pub(crate) fn guess_form(input: &[u8]) -> Form {
    let first = input.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'[' | b'{' | b'"') => Form::Json,
        _ if input.starts_with(b"0x")
            && input
                .iter()
                .all(|b| b.is_ascii_hexdigit() || b.is_ascii_whitespace() || *b == b'x') =>
        {
            Form::Hex
        }
        _ => Form::Ssz,
    }
}

pub(crate) fn run(args: ConvertArgs) -> Result<()> {
    let input = crate::input::read(args.file.as_deref())?;
    let fork = args.fork.or_latest_for(&args.message)?;
    let (m, kind) = resolve(&args, fork)?;
    let from = args.from.unwrap_or_else(|| guess_form(&input));
    let stdout_is_tty = io::stdout().is_terminal();
    let to = args.to.unwrap_or(match from {
        Form::Json if stdout_is_tty => Form::Hex,
        Form::Json => Form::Ssz,
        Form::Ssz | Form::Hex => Form::Json,
    });
    let source = match &args.file {
        Some(path) => path.display().to_string(),
        None => "standard input".to_string(),
    };

    // alloy's blob type is a 128 KiB array moved by value; give the decoders room.
    let output = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || convert(m, fork, kind, from, to, &input))
        .context("starting the converter thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the converter thread panicked"))?
        .with_context(|| format!("converting {} ({}, {kind}, fork {fork})", source, m.name))?;

    let mut out = io::stdout().lock();
    out.write_all(&output)?;
    if to != Form::Ssz {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

fn convert(
    m: &'static MethodSpec,
    fork: Fork,
    kind: MessageKind,
    from: Form,
    to: Form,
    input: &[u8],
) -> Result<Vec<u8>> {
    let message = decode(m, fork, kind, from, input)?;
    Ok(match to {
        Form::Json => {
            let compact = if kind == m.request {
                message.to_json_params()?
            } else {
                message.to_json()?
            };
            let value: serde_json::Value = serde_json::from_slice(&compact)?;
            serde_json::to_vec_pretty(&value)?
        }
        Form::Ssz => {
            if message.is_no_content() {
                bail!("a null result has no body: REST answers 204 No Content");
            }
            message.to_ssz(fork)?
        }
        Form::Hex => const_hex::encode_prefixed(message.to_ssz(fork)?).into_bytes(),
    })
}

/// Decodes one message of `kind` from `input` in the form `from`.
pub(crate) fn decode(
    m: &'static MethodSpec,
    fork: Fork,
    kind: MessageKind,
    from: Form,
    input: &[u8],
) -> Result<Message> {
    Ok(match from {
        Form::Json => Message::from_json(m, fork, kind, input)?,
        Form::Ssz => Message::from_ssz(m, fork, kind, input)?,
        Form::Hex => {
            let text: String = String::from_utf8_lossy(input).split_whitespace().collect();
            let bytes = const_hex::decode(&text).context("input is not 0x-hex")?;
            Message::from_ssz(m, fork, kind, &bytes)?
        }
    })
}

pub(crate) fn print_methods() -> Result<()> {
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{:<34} {:<28} {:<30} forks",
        "JSON-RPC method", "REST resource", "messages"
    )?;
    for m in METHODS.iter() {
        let forks: Vec<_> = m.forks.iter().map(|f| f.name()).collect();
        writeln!(
            out,
            "{:<34} {:<28} {:<30} {}",
            m.name,
            format!(
                "{} /{}",
                m.resource.http_method().as_str(),
                m.resource.name()
            ),
            format!("{} -> {}", m.request, m.response),
            forks.join(",")
        )?;
    }
    Ok(())
}
