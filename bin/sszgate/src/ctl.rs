//! `sszgate ctl`: the control point of a running `sszgate proxy` (flow control and fault
//! injection for client testing), over its control address: list, add and remove rules,
//! pause and resume forwarding.
//!
//! The flags of `ctl add` become a rule (`inject::RuleSpec`) in a pure function ([`rule`]);
//! the proxy checks it again and says why it refuses one.

use std::net::SocketAddr;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::{Args, Subcommand};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use sszgate_gateway::inject::{Action, RuleSpec};

/// `sszgate ctl`.
#[derive(Args, Debug)]
pub(crate) struct CtlArgs {
    /// The proxy's control address (its --metrics).
    #[arg(long, env = "SSZGATE_METRICS", default_value = "127.0.0.1:9551")]
    control: SocketAddr,
    /// The proxy's --control-token, when it has one.
    #[arg(long, env = "SSZGATE_CONTROL_TOKEN")]
    token: Option<String>,
    #[command(subcommand)]
    action: CtlAction,
}

#[derive(Subcommand, Debug)]
enum CtlAction {
    /// List the rules in force and the pause (JSON).
    Rules,
    /// Add a rule: what it does to the calls of a method, how often and for how long.
    Add(AddArgs),
    /// Remove one rule by its id.
    Rm {
        /// The rule's id (from `add` or `rules`).
        id: u64,
    },
    /// Remove every rule.
    Clear,
    /// Pause forwarding: calls are held until `resume` (or refused with 503 with --reject).
    Pause {
        /// Answer 503 at once instead of holding.
        #[arg(long)]
        reject: bool,
    },
    /// Resume forwarding: held calls go on.
    Resume,
}

/// `sszgate ctl add`: one action and where it applies.
#[derive(Args, Debug, Default)]
#[command(group(clap::ArgGroup::new("action").required(true).multiple(false)))]
struct AddArgs {
    /// The method: a JSON-RPC name (engine_getPayloadV4) or a family (engine_newPayload*);
    /// every call when absent.
    #[arg(long)]
    method: Option<String>,
    /// Relay the calls this many milliseconds late.
    #[arg(long, group = "action", value_name = "MS")]
    delay: Option<u64>,
    /// Answer with this JSON-RPC error, as CODE:MESSAGE (-38001:Unknown payload).
    #[arg(
        long,
        group = "action",
        value_name = "CODE:MESSAGE",
        allow_hyphen_values = true
    )]
    rpc_error: Option<String>,
    /// Answer with this HTTP status and no body.
    #[arg(long, group = "action", value_name = "STATUS")]
    http_status: Option<u16>,
    /// Answer newPayload or forkchoiceUpdated with this status (SYNCING or ACCEPTED).
    #[arg(long, group = "action", value_name = "STATUS")]
    payload_status: Option<String>,
    /// Close the connection without an answer.
    #[arg(long, group = "action")]
    drop: bool,
    /// Set a field of the EL's JSON-RPC result, as POINTER=JSON (/payloadStatus/status="INVALID").
    #[arg(long, group = "action", value_name = "POINTER=JSON")]
    corrupt: Option<String>,
    /// Only every Nth matching call.
    #[arg(long, value_name = "N")]
    every: Option<u64>,
    /// End after this many changed calls.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// End after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<u64>,
}

/// Runs `sszgate ctl`.
pub(crate) fn run(args: CtlArgs) -> Result<()> {
    let (method, path, body) = match &args.action {
        CtlAction::Rules => ("GET", "/_sszgate/rules".to_string(), None),
        CtlAction::Add(add) => (
            "POST",
            "/_sszgate/rules".into(),
            Some(serde_json::to_value(rule(add)?)?),
        ),
        CtlAction::Rm { id } => ("DELETE", format!("/_sszgate/rules/{id}"), None),
        CtlAction::Clear => ("DELETE", "/_sszgate/rules".into(), None),
        CtlAction::Pause { reject } => {
            let mode = if *reject { "reject" } else { "hold" };
            (
                "POST",
                "/_sszgate/pause".into(),
                Some(serde_json::json!({ "mode": mode })),
            )
        }
        CtlAction::Resume => ("POST", "/_sszgate/resume".into(), None),
    };
    let answer = crate::runtime()?.block_on(send(&args, method, &path, body))?;
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(())
}

/// The rule `ctl add`'s flags describe.
fn rule(add: &AddArgs) -> Result<RuleSpec> {
    let action = if let Some(ms) = add.delay {
        Action::Delay { ms }
    } else if let Some(error) = &add.rpc_error {
        let (code, message) = error
            .split_once(':')
            .context("--rpc-error is CODE:MESSAGE, e.g. -38001:Unknown payload")?;
        let code = code
            .trim()
            .parse()
            .with_context(|| format!("--rpc-error code {code:?} is not an integer"))?;
        Action::RpcError {
            code,
            message: message.to_string(),
        }
    } else if let Some(status) = add.http_status {
        Action::HttpStatus { status }
    } else if let Some(status) = &add.payload_status {
        Action::PayloadStatus {
            status: status.to_ascii_uppercase(),
        }
    } else if add.drop {
        Action::Drop
    } else if let Some(corrupt) = &add.corrupt {
        let (pointer, value) = corrupt
            .split_once('=')
            .context("--corrupt is POINTER=JSON, e.g. /payloadStatus/status=\"INVALID\"")?;
        let value = serde_json::from_str(value)
            .with_context(|| format!("--corrupt value {value:?} is not JSON (quote strings)"))?;
        Action::Corrupt {
            pointer: pointer.to_string(),
            value,
        }
    } else {
        bail!(
            "name what the rule does (--delay, --rpc-error, --http-status, --payload-status, --drop or --corrupt)"
        )
    };
    Ok(RuleSpec {
        method: add.method.clone(),
        action,
        every: add.every,
        count: add.count,
        seconds: add.seconds,
    })
}

/// One control call; its JSON answer, or an error with the proxy's own words.
async fn send(
    args: &CtlArgs,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<serde_json::Value> {
    let mut request = http::Request::builder()
        .method(method)
        .uri(format!("http://{}{path}", args.control))
        .header(http::header::CONTENT_TYPE, "application/json");
    if let Some(token) = &args.token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = body.map_or(Bytes::new(), |b| Bytes::from(b.to_string()));
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let response = client
        .request(request.body(Full::new(body))?)
        .await
        .with_context(|| {
            format!(
                "the control address {} (is `sszgate proxy` running, with this --metrics?)",
                args.control
            )
        })?;
    let status = response.status();
    // A control answer is a list of rules; a megabyte is far past any.
    let answer = Limited::new(response.into_body(), 1 << 20)
        .collect()
        .await
        .map_err(|e| anyhow::anyhow!("reading the control answer: {e}"))?
        .to_bytes();
    let answer: serde_json::Value = serde_json::from_slice(&answer).with_context(|| {
        format!(
            "HTTP {status}: not JSON: {}",
            String::from_utf8_lossy(&answer)
        )
    })?;
    if !status.is_success() {
        bail!(
            "HTTP {status}: {}",
            answer["error"].as_str().unwrap_or(&answer.to_string())
        );
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_the_rule_they_say() {
        let add = AddArgs {
            method: Some("engine_getPayloadV4".into()),
            rpc_error: Some("-38001:Unknown payload".into()),
            count: Some(1),
            ..AddArgs::default()
        };
        let spec = rule(&add).unwrap();
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            serde_json::json!({"method":"engine_getPayloadV4","count":1,
                "action":{"kind":"rpc_error","code":-38001,"message":"Unknown payload"}})
        );
        let corrupt = AddArgs {
            corrupt: Some(r#"/payloadStatus/status="INVALID""#.into()),
            every: Some(2),
            ..AddArgs::default()
        };
        assert_eq!(
            rule(&corrupt).unwrap().action,
            Action::Corrupt {
                pointer: "/payloadStatus/status".into(),
                value: serde_json::json!("INVALID")
            }
        );
        let syncing = AddArgs {
            payload_status: Some("syncing".into()),
            ..AddArgs::default()
        };
        assert_eq!(
            rule(&syncing).unwrap().action,
            Action::PayloadStatus {
                status: "SYNCING".into()
            }
        );
    }

    #[test]
    fn flags_that_say_nothing_clear_are_refused_with_how() {
        let bad_error = AddArgs {
            rpc_error: Some("nocolon".into()),
            ..AddArgs::default()
        };
        assert!(
            rule(&bad_error)
                .unwrap_err()
                .to_string()
                .contains("CODE:MESSAGE")
        );
        let bad_json = AddArgs {
            corrupt: Some("/a=INVALID".into()),
            ..AddArgs::default()
        };
        assert!(format!("{:#}", rule(&bad_json).unwrap_err()).contains("quote strings"));
        assert!(
            rule(&AddArgs::default())
                .unwrap_err()
                .to_string()
                .contains("name what the rule does")
        );
    }
}
