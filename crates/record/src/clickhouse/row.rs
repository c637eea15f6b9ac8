//! A record as a row of `sszgate_calls` (one JSON object per line, `FORMAT JSONEachRow`),
//! stamped with the node's identity and the row's place in the spool.

use serde::Serialize;

use crate::record::Record;

/// Who wrote a row: stamped on every row, so a fleet's rows can be told apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The node's name (default: the host name).
    pub node: String,
    /// The network's name (`mainnet`, `hoodi`, …).
    pub network: String,
    /// The network's chain id when the name is a known one, else 0.
    pub network_id: i32,
    /// A new id for every run of the process (xatu's `meta_client_id`).
    pub run_id: String,
}

impl Identity {
    /// An identity for this run: `node` defaults to the host name, `network` to `unknown`.
    pub fn new(node: Option<String>, network: Option<String>) -> Identity {
        let node = node.filter(|n| !n.is_empty()).unwrap_or_else(host_name);
        let network = network
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "unknown".to_string());
        let network_id = match network.as_str() {
            "mainnet" => 1,
            "sepolia" => 11_155_111,
            "holesky" => 17_000,
            "hoodi" => 560_048,
            _ => 0,
        };
        Identity {
            node,
            network,
            network_id,
            run_id: uuid::Uuid::new_v4().to_string(),
        }
    }
}

/// The host's name, from the kernel (Linux), else `sszgate`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "sszgate".to_string())
}

#[derive(Serialize)]
struct CallRow<'a> {
    spool_id: &'a str,
    spool_seq: u64,
    node: &'a str,
    network: &'a str,
    network_id: i32,
    run_id: &'a str,
    recorder_version: &'static str,
    recorder_os: &'static str,
    event_date_time: i64,
    method_version: &'a str,
    el_implementation: &'a str,
    el_version: &'a str,
    #[serde(flatten)]
    record: &'a Record,
}

/// Appends `record` as one JSON line (a row of `sszgate_calls`) to `out`.
pub(crate) fn call_row(
    record: &Record,
    identity: &Identity,
    spool_id: &str,
    spool_seq: u64,
    out: &mut Vec<u8>,
) {
    // Bodies are kept for JSON-lines sinks only; the table has no columns for them.
    let without_bodies;
    let record = if record.request_body.is_some() || record.response_body.is_some() {
        without_bodies = Record {
            request_body: None,
            response_body: None,
            ..record.clone()
        };
        &without_bodies
    } else {
        record
    };
    let (el_implementation, el_version) = el_parts(record.el_client.as_deref());
    let row = CallRow {
        spool_id,
        spool_seq,
        node: &identity.node,
        network: &identity.network,
        network_id: identity.network_id,
        run_id: &identity.run_id,
        recorder_version: env!("CARGO_PKG_VERSION"),
        recorder_os: std::env::consts::OS,
        event_date_time: record.arrival_unix_us.div_euclid(1_000_000),
        method_version: method_version(record.method.as_deref()),
        el_implementation,
        el_version,
        record,
    };
    serde_json::to_writer(&mut *out, &row).expect("a row serializes");
    out.push(b'\n');
}

/// `V4` of `engine_newPayloadV4`; empty when the method has no version.
fn method_version(method: Option<&str>) -> &str {
    let Some(method) = method else { return "" };
    match method.rfind('V') {
        Some(i) if i + 1 < method.len() && method[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            &method[i..]
        }
        _ => "",
    }
}

/// The name and version of an EL client string `CODE/NAME/VERSION/COMMIT`
/// (`engine_getClientVersionV1`, as the gateway records it).
fn el_parts(el_client: Option<&str>) -> (&str, &str) {
    let mut parts = el_client.unwrap_or("").split('/');
    let _code = parts.next();
    (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_versions_and_el_parts() {
        assert_eq!(method_version(Some("engine_newPayloadV4")), "V4");
        assert_eq!(method_version(Some("engine_getBlobsV10")), "V10");
        assert_eq!(method_version(Some("engine_exchangeCapabilities")), "");
        assert_eq!(method_version(Some("eth_chainId")), "");
        assert_eq!(method_version(None), "");
        assert_eq!(
            el_parts(Some("GE/Geth/1.17.8-stable/8a1b2c3d")),
            ("Geth", "1.17.8-stable")
        );
        assert_eq!(el_parts(None), ("", ""));
    }

    #[test]
    fn known_networks_get_their_chain_id() {
        let id = Identity::new(Some("n1".into()), Some("hoodi".into()));
        assert_eq!((id.node.as_str(), id.network_id), ("n1", 560_048));
        let id = Identity::new(None, None);
        assert_eq!((id.network.as_str(), id.network_id), ("unknown", 0));
        assert!(!id.node.is_empty());
        assert_ne!(id.run_id, Identity::new(None, None).run_id);
    }
}
