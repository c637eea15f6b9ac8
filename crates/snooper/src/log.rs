//! rpc-snooper's per-call log lines, as its logrus text formatter writes them:
//! `time="…" level=info msg="REQUEST #N: POST /" length=98 method=engine_… type=json`, then
//! the body (JSON re-indented with sorted keys, binary as 0x-hex), then `RESPONSE #N: …`
//! with `duration_ms`, `length`, `status`, `type`. With colours (the default) the line is
//! logrus's coloured form and the body is cyan (request), green (2xx) or red; `--truncate`
//! shortens 0x-strings over 256 characters; `--hide-bodies` leaves bodies out; `--log-skip`
//! leaves the calls of the methods named out altogether.
//!
//! Not here: when lines are written (the front's worker, off the relay).

use std::time::{SystemTime, UNIX_EPOCH};

use sszgate_gateway::Exchange;

use crate::{
    cli::LogSettings,
    pretty::{Json, LazyJson},
};

/// Strings longer than this (0x included) are shortened by `--truncate`.
const TRUNCATE_OVER: usize = 256;
/// Hex digits kept at each end of a shortened string.
const PREVIEW: usize = 32;

const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// The two entries (request, response) of call number `n` — the request and rpc-snooper's
/// `call failed:` line when the target could not be reached or did not answer — or nothing
/// when `--log-skip` names its method.
/// `answer` is the answer's body, its frames joined.
pub fn call_lines(
    n: u64,
    exchange: &Exchange,
    answer: &LazyJson<'_>,
    settings: &LogSettings,
) -> Option<String> {
    let request_body = LazyJson::new(&exchange.request);
    let request = Body::of(&request_body, exchange.request_content_type.as_deref());
    if let Some(method) = request.json_method()
        && skipped(method, &settings.skip)
    {
        return None;
    }
    let line = format!("{} {}", exchange.method, exchange.target);
    let mut fields = vec![("length", exchange.request.len().to_string())];
    fields.extend(request.method_field());
    fields.push(("type", request.kind().to_string()));
    let mut out = entry(settings, &format!("REQUEST #{n}: {line}"), fields, CYAN);
    out.push_str(&request.shown(settings, CYAN));
    if let Some(failure) = exchange.failure.as_deref()
        && exchange.response.is_empty()
        && exchange.response_len == 0
    {
        out.push_str(&error_entry(
            settings,
            &format!("call failed: proxy request error: {failure}"),
        ));
        return Some(out);
    }
    let response = Body::of(answer, exchange.response_content_type.as_deref());
    let colour = if (200..300).contains(&exchange.status) {
        GREEN
    } else {
        RED
    };
    let fields = vec![
        ("duration_ms", exchange.duration.as_millis().to_string()),
        ("length", exchange.response_len.to_string()),
        ("status", exchange.status.to_string()),
        ("type", response.kind().to_string()),
    ];
    out.push_str(&entry(
        settings,
        &format!("RESPONSE #{n}: {line}"),
        fields,
        colour,
    ));
    out.push_str(&response.shown(settings, colour));
    Some(out)
}

/// True when `method` is among `skip` (a name, or a prefix ending in `*`).
fn skipped(method: &str, skip: &[String]) -> bool {
    skip.iter().any(|s| match s.strip_suffix('*') {
        Some(prefix) => method.starts_with(prefix),
        None => s == method,
    })
}

/// A body as the log shows it.
enum Body<'t, 'a> {
    Json(&'t Json<'a>),
    Ssz(&'a [u8]),
    Unknown,
}

impl<'t, 'a> Body<'t, 'a> {
    fn of(body: &'t LazyJson<'a>, content_type: Option<&str>) -> Body<'t, 'a> {
        if content_type.is_some_and(|t| t.contains("octet-stream")) {
            return Body::Ssz(body.body);
        }
        match body.json() {
            Some(value) => Body::Json(value),
            None => Body::Unknown,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Body::Json(_) => "json",
            Body::Ssz(_) => "ssz",
            Body::Unknown => "unknown",
        }
    }

    /// The JSON-RPC method of a single call.
    fn json_method(&self) -> Option<&str> {
        match self {
            Body::Json(v) => v.get("method")?.as_str(),
            _ => None,
        }
    }

    /// `method=…` for a single call, `methods=a, b` for a batch.
    fn method_field(&self) -> Option<(&'static str, String)> {
        let Body::Json(value) = self else { return None };
        if let Some(batch) = value.as_array() {
            let names: Vec<&str> = batch
                .iter()
                .filter_map(|c| c.get("method")?.as_str())
                .collect();
            return (!names.is_empty()).then(|| ("methods", names.join(", ")));
        }
        self.json_method().map(|m| ("method", m.to_string()))
    }

    /// The body text after the entry line, with its blank line; empty when hidden.
    fn shown(&self, settings: &LogSettings, colour: &str) -> String {
        let text = match self {
            _ if settings.hide_bodies => return String::new(),
            Body::Json(value) => value.pretty(settings.truncate),
            Body::Ssz(bytes) => hex_body(bytes, settings.truncate),
            Body::Unknown => return String::new(),
        };
        match settings.color {
            true => format!("{colour}{text}{RESET}\n\n"),
            false => format!("{text}\n\n"),
        }
    }
}

/// A binary body as 0x-hex, shortened past the threshold when truncating.
fn hex_body(bytes: &[u8], truncate: bool) -> String {
    if truncate && bytes.len() > TRUNCATE_OVER / 2 {
        let (head, tail) = (&bytes[..PREVIEW / 2], &bytes[bytes.len() - PREVIEW / 2..]);
        return format!(
            "0x{}...{} <{} bytes>",
            const_hex::encode(head),
            const_hex::encode(tail),
            bytes.len()
        );
    }
    const_hex::encode_prefixed(bytes)
}

/// `0x<32 hex>...<32 hex> <N bytes>` for a 0x-string over 256 characters whose first 16
/// digits are hex; `None` otherwise.
pub fn truncate_hex(s: &str) -> Option<String> {
    if s.len() <= TRUNCATE_OVER || !(s.starts_with("0x") || s.starts_with("0X")) {
        return None;
    }
    let digits = &s[2..];
    if !digits.bytes().take(16).all(|b| b.is_ascii_hexdigit()) || !s.is_ascii() {
        return None;
    }
    Some(format!(
        "0x{}...{} <{} bytes>",
        &digits[..PREVIEW],
        &s[s.len() - PREVIEW..],
        (s.len() - 2) / 2
    ))
}

/// One logrus entry at level info: plain `time="…" level=info msg="…" k=v…`, or coloured
/// `INFO[…] msg  k=v…` as logrus writes it to a terminal.
fn entry(
    settings: &LogSettings,
    message: &str,
    fields: Vec<(&str, String)>,
    _colour: &str,
) -> String {
    let time = rfc3339_now();
    if settings.color {
        let mut out = format!("{CYAN}INFO{RESET}[{time}] {message:<44}");
        for (k, v) in fields {
            out.push_str(&format!(" {CYAN}{k}{RESET}={}", quoted(&v)));
        }
        out.push('\n');
        return out;
    }
    let mut out = format!("time=\"{time}\" level=info msg={}", quoted(message));
    for (k, v) in fields {
        out.push_str(&format!(" {k}={}", quoted(&v)));
    }
    out.push('\n');
    out
}

/// An error line without fields (logrus: `ERRO`, red, the message padded to 44).
fn error_entry(settings: &LogSettings, message: &str) -> String {
    let time = rfc3339_now();
    match settings.color {
        true => format!("{RED}ERRO{RESET}[{time}] {message:<44} \n"),
        false => format!("time=\"{time}\" level=error msg={}\n", quoted(message)),
    }
}

/// logrus quotes a value unless every character is a letter, digit or one of `-._/@^+`.
fn quoted(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._/@^+".contains(c));
    match plain {
        true => value.to_string(),
        false => format!("{value:?}"),
    }
}

/// Now, UTC, as `2026-11-27T00:38:49Z`.
fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::exchange;

    /// The lines of `exchange`, its answer's frames joined as the worker joins them.
    fn logged(n: u64, exchange: &Exchange, settings: &LogSettings) -> Option<String> {
        let body = exchange.response.concat();
        call_lines(n, exchange, &LazyJson::new(&body), settings)
    }

    fn settings(color: bool, hide_bodies: bool, truncate: bool) -> LogSettings {
        LogSettings {
            color,
            truncate,
            hide_bodies,
            skip: vec!["eth_chainId".into(), "engine_exchange*".into()],
            verbose: false,
        }
    }

    #[test]
    fn plain_lines_are_logrus_text_with_sorted_fields_and_the_bodies() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"engine_getPayloadV4","params":["0x01"]}"#;
        let text = logged(3, &exchange(call), &settings(false, false, true)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("time=\"") && lines[0].ends_with(
            "level=info msg=\"REQUEST #3: POST /\" length=73 method=engine_getPayloadV4 type=json"
        ), "{}", lines[0]);
        assert_eq!(lines[1], "{");
        assert_eq!(lines[2], "  \"id\": 1,");
        assert!(text.contains("msg=\"RESPONSE #3: POST /\" duration_ms=7 length=39 status=200 type=json\n{\n  \"id\": 1,\n  \"jsonrpc\": \"2.0\",\n  \"result\": \"0x1\"\n}\n\n"), "{text}");
        assert!(!text.contains('\x1b'));
        let hidden = logged(3, &exchange(call), &settings(false, true, true)).unwrap();
        assert_eq!(hidden.lines().count(), 2, "{hidden}");
        let coloured = logged(3, &exchange(call), &settings(true, false, true)).unwrap();
        assert!(coloured.contains("\x1b[36mINFO\x1b[0m[") && coloured.contains("\x1b[32m{"));
    }

    #[test]
    fn a_call_the_target_never_answered_logs_the_request_and_call_failed() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"engine_getPayloadV4"}"#;
        let mut failed = exchange(call);
        failed.failure = Some("connection refused".into());
        (failed.response, failed.response_len, failed.status) = (Vec::new(), 0, 502);
        let text = logged(4, &failed, &settings(false, false, true)).unwrap();
        let last = text.lines().last().unwrap();
        assert!(text.contains("msg=\"REQUEST #4: POST /\""), "{text}");
        assert!(!text.contains("RESPONSE"), "{text}");
        assert!(
            last.starts_with("time=\"")
                && last.ends_with(
                    "level=error msg=\"call failed: proxy request error: connection refused\""
                ),
            "{last}"
        );
        let coloured = logged(4, &failed, &settings(true, false, true)).unwrap();
        assert!(coloured.contains("\x1b[31mERRO\x1b[0m["), "{coloured}");
        // An answer that ended early after it started keeps its response line.
        let mut cut = exchange(call);
        cut.failure = Some("reset".into());
        let text = logged(5, &cut, &settings(false, false, true)).unwrap();
        assert!(text.contains("RESPONSE #5") && !text.contains("call failed"));
    }

    #[test]
    fn log_skip_leaves_out_named_methods_and_prefixes_and_batches_list_their_methods() {
        let s = settings(false, false, true);
        let single = |m: &str| exchange(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{m}"}}"#));
        assert!(logged(1, &single("eth_chainId"), &s).is_none());
        assert!(logged(1, &single("engine_exchangeCapabilities"), &s).is_none());
        assert!(logged(1, &single("eth_chainIdX"), &s).is_some());
        let batch = r#"[{"method":"eth_chainId"},{"method":"eth_blockNumber"}]"#;
        let text = logged(1, &exchange(batch), &s).unwrap();
        assert!(
            text.contains("methods=\"eth_chainId, eth_blockNumber\""),
            "{text}"
        );
    }

    #[test]
    fn truncation_shortens_long_hex_only() {
        let long = format!("0x{}", "ab".repeat(200));
        assert_eq!(
            truncate_hex(&long).unwrap(),
            format!("0x{}...{} <200 bytes>", "ab".repeat(16), "ab".repeat(16))
        );
        assert_eq!(truncate_hex(&"0x1".repeat(10)), None);
        assert_eq!(truncate_hex(&format!("0xzz{}", "a".repeat(300))), None);
        assert_eq!(truncate_hex(&"a".repeat(300)), None);
        assert_eq!(hex_body(&[1, 2, 255], true), "0x0102ff");
        assert!(hex_body(&[7u8; 200], true).ends_with("<200 bytes>"));
        assert_eq!(hex_body(&[7u8; 200], false).len(), 402);
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
