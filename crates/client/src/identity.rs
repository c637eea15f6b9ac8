//! Client identity: the `X-Engine-Client-Version` value sszgate sends as a caller, and the
//! EL's `ClientVersionV1` read from an `engine_getClientVersionV1` answer.
//!
//! Not here: sszgate's own `ClientVersionV1` params (`sszgate_engine::translate`, which also
//! needs them for a bridged `/identity`).

use sszgate_engine::{scan, translate};

/// The `X-Engine-Client-Version` value of sszgate acting as `role` (`drive`, `bridge`), so a
/// proxy in between can name the CL side: `SG-sszgate-<role>-<version>`.
pub fn header_value(role: &str) -> String {
    format!("SG-sszgate-{role}-{}", env!("CARGO_PKG_VERSION"))
}

/// The JSON-RPC request asking an EL's client version, with sszgate's own as params.
pub fn client_version_request() -> Vec<u8> {
    crate::request::envelope(
        1,
        "engine_getClientVersionV1",
        &translate::own_client_version_params(),
    )
}

/// The EL's client version in an `engine_getClientVersionV1` answer, as
/// `code/name/version/commit` of its first entry (`?` for a missing field); `None` when the
/// answer holds none.
pub fn read_client_version(answer: &[u8]) -> Option<String> {
    let result = scan::envelope(answer)?.result?;
    let entries: Vec<serde_json::Value> = serde_json::from_slice(result).ok()?;
    describe(entries.first()?)
}

/// A `ClientVersionV1` object as `code/name/version/commit` (`?` for a missing field); `None`
/// when `version` is not an object. The one place a client's version is written for a record,
/// whether the EL answered it or the CL sent it.
pub fn describe(version: &serde_json::Value) -> Option<String> {
    let version = version.as_object()?;
    let field = |k: &str| version.get(k).and_then(|v| v.as_str()).unwrap_or("?");
    Some(format!(
        "{}/{}/{}/{}",
        field("code"),
        field("name"),
        field("version"),
        field("commit")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_el_version_is_read_from_its_answer() {
        let answer = br#"{"jsonrpc":"2.0","id":1,"result":[{"code":"GE","name":"Geth","version":"1.16.7","commit":"0xb9f3a3d9"}]}"#;
        assert_eq!(
            read_client_version(answer).as_deref(),
            Some("GE/Geth/1.16.7/0xb9f3a3d9")
        );
        let partial = br#"{"jsonrpc":"2.0","id":1,"result":[{"code":"NM"}]}"#;
        assert_eq!(read_client_version(partial).as_deref(), Some("NM/?/?/?"));
        for none in [
            &br#"{"jsonrpc":"2.0","id":1,"result":[]}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
            b"garbage",
        ] {
            assert_eq!(read_client_version(none), None);
        }
    }

    #[test]
    fn the_request_carries_sszgate_as_the_caller() {
        let request: serde_json::Value = serde_json::from_slice(&client_version_request()).unwrap();
        assert_eq!(request["method"], "engine_getClientVersionV1");
        assert_eq!(request["params"][0]["code"], "SG");
        assert_eq!(request["params"][0]["name"], "sszgate");
        assert!(header_value("drive").starts_with("SG-sszgate-drive-"));
    }
}
