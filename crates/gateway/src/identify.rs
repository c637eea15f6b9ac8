//! Who the CL is, for every record: its `X-Engine-Client-Version` header (REST-SSZ callers
//! send one), the `ClientVersionV1` it sends as the params of `engine_getClientVersionV1`
//! (JSON-RPC callers do, once, at start), the operator's `--cl-label`, or its `User-Agent`,
//! in that order. What a CL says of itself is remembered for its address, so the calls it
//! makes on other connections later are stamped too.
//!
//! Not here: the EL's identity (asked by the gateway itself, `el_name`).

use std::{collections::HashMap, net::IpAddr, sync::RwLock};

use http::{HeaderMap, header};
use sszgate_engine::method;

/// Addresses remembered at most: a CL fleet behind one proxy is a handful; past this the
/// memory starts again rather than grow with whoever connects.
const MAX_PEERS: usize = 1024;

/// Longest identity kept, in bytes: a `code/name/version/commit` is under a hundred.
const MAX_IDENTITY: usize = 256;

/// The address a call came from, and the serve loop's memory of what addresses said.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    /// The caller's IP address.
    pub(crate) ip: IpAddr,
    /// What each address said of itself.
    pub(crate) identities: std::sync::Arc<ClIdentities>,
}

/// What each CL address said of itself.
#[derive(Debug, Default)]
pub(crate) struct ClIdentities {
    by_peer: RwLock<HashMap<IpAddr, String>>,
}

impl ClIdentities {
    /// Remembers `who` for `peer`.
    pub(crate) fn remember(&self, peer: IpAddr, who: &str) {
        // Every call of a CL that sends its header says the same: read before writing.
        let known = self.by_peer.read().expect("identities lock");
        if known.get(&peer).is_some_and(|known| known == who) {
            return;
        }
        drop(known);
        let mut by_peer = self.by_peer.write().expect("identities lock");
        if by_peer.len() >= MAX_PEERS {
            by_peer.clear();
        }
        by_peer.insert(peer, who.to_string());
    }

    /// What `peer` said of itself, if it did.
    pub(crate) fn of(&self, peer: IpAddr) -> Option<String> {
        self.by_peer
            .read()
            .expect("identities lock")
            .get(&peer)
            .cloned()
    }
}

/// The CL of a call from its head: its own header (remembered for `peer`), else what `peer`
/// said before, else the operator's `label`, else its `User-Agent`.
pub(crate) fn from_head(
    headers: &HeaderMap,
    label: Option<&str>,
    peer: Option<&Peer>,
) -> Option<String> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| bounded(v.trim()))
            .filter(|v| !v.is_empty())
    };
    if let Some(own) = text(method::CLIENT_VERSION_HEADER) {
        if let Some(peer) = peer {
            peer.identities.remember(peer.ip, &own);
        }
        return Some(own);
    }
    peer.and_then(|peer| peer.identities.of(peer.ip))
        .or_else(|| label.map(str::to_string))
        .or_else(|| text(header::USER_AGENT.as_str()))
}

/// The CL's `ClientVersionV1` in the params of an `engine_getClientVersionV1` call, as
/// `code/name/version/commit` (`?` for a missing field); `None` when the params hold none.
pub(crate) fn from_client_version_params(params: &[u8]) -> Option<String> {
    let params: Vec<serde_json::Value> = serde_json::from_slice(params).ok()?;
    let who = sszgate_client::identity::describe(params.first()?)?;
    Some(bounded(&who))
}

/// `text` cut to [`MAX_IDENTITY`] bytes, at a character boundary.
fn bounded(text: &str) -> String {
    let mut end = text.len().min(MAX_IDENTITY);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn the_cl_is_named_by_its_header_then_its_past_then_the_label_then_its_agent() {
        let identities = std::sync::Arc::new(ClIdentities::default());
        let peer = |ip: &str| Peer {
            ip: ip.parse().unwrap(),
            identities: identities.clone(),
        };
        let (a, b) = (&peer("127.0.0.1"), &peer("127.0.0.2"));
        let ua = headers(&[("user-agent", "lodestar/v1.22.0")]);
        assert_eq!(
            from_head(&ua, None, Some(a)).as_deref(),
            Some("lodestar/v1.22.0")
        );
        assert_eq!(
            from_head(&ua, Some("cl-1"), Some(a)).as_deref(),
            Some("cl-1")
        );
        let own = headers(&[
            ("x-engine-client-version", "LS-Lodestar-1.22.0-6de0736"),
            ("user-agent", "x"),
        ]);
        assert_eq!(
            from_head(&own, Some("cl-1"), Some(a)).as_deref(),
            Some("LS-Lodestar-1.22.0-6de0736")
        );
        // Remembered for a, not for b.
        assert_eq!(
            from_head(&ua, Some("cl-1"), Some(a)).as_deref(),
            Some("LS-Lodestar-1.22.0-6de0736")
        );
        assert_eq!(
            from_head(&ua, Some("cl-1"), Some(b)).as_deref(),
            Some("cl-1")
        );
        assert_eq!(from_head(&HeaderMap::new(), None, None), None);
    }

    #[test]
    fn a_client_version_is_read_from_the_params_and_bounded() {
        let params = br#"[{"code":"LS","name":"Lodestar","version":"v1.22.0","commit":"6de0736"}]"#;
        assert_eq!(
            from_client_version_params(params).as_deref(),
            Some("LS/Lodestar/v1.22.0/6de0736")
        );
        assert_eq!(
            from_client_version_params(br#"[{"code":"LS"}]"#).as_deref(),
            Some("LS/?/?/?")
        );
        for none in [&b"[]"[..], b"[1]", b"{}", b"not json"] {
            assert_eq!(from_client_version_params(none), None);
        }
        let long = format!(r#"[{{"code":"LS","name":"{}"}}]"#, "é".repeat(500));
        let who = from_client_version_params(long.as_bytes()).unwrap();
        assert!(
            who.len() <= MAX_IDENTITY && who.starts_with("LS/é"),
            "{}",
            who.len()
        );
    }

    #[test]
    fn the_memory_is_bounded() {
        let ids = ClIdentities::default();
        for i in 0..(MAX_PEERS as u32 + 10) {
            ids.remember(IpAddr::from(i.to_be_bytes()), "cl");
        }
        assert!(ids.by_peer.read().unwrap().len() <= MAX_PEERS);
    }
}
