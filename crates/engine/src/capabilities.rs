//! The REST capabilities document (`GET /engine/v1/capabilities`) and its relation to the
//! JSON-RPC method list of `engine_exchangeCapabilities`.
//!
//! Both say what an endpoint supports; the document per fork and revision, the list per method.
//! The conversion goes through the method table, so a fork is advertised exactly when the
//! methods a CL of that fork calls are all there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    fork::Fork,
    method::{self, Family, METHODS, Resource},
    ssz::{MAX_BLOBS_REQUEST, MAX_BODIES_REQUEST, MAX_REQUEST_BODY_SIZE},
};

/// The JSON body of `GET /engine/v1/capabilities` (`engine-rest-ssz.md` § Capabilities).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilitiesDocument {
    /// Forks whose fork-scoped endpoints are served.
    pub supported_forks: Vec<String>,
    /// The fork-scoped endpoints served.
    pub fork_scoped_endpoints: Vec<String>,
    /// Revisions of the independently versioned endpoints (`blobs`).
    pub independently_versioned: BTreeMap<String, Vec<String>>,
    /// Endpoints that are neither.
    pub unscoped_endpoints: Vec<String>,
    /// Request limits (`bodies.max_count`, `blobs.max_versioned_hashes`, `payload.max_bytes`).
    #[serde(default)]
    pub limits: BTreeMap<String, u64>,
}

const HOT_FAMILIES: [Family; 3] = [
    Family::NewPayload,
    Family::ForkchoiceUpdated,
    Family::GetPayload,
];

impl CapabilitiesDocument {
    /// The document of an EL that answered `engine_exchangeCapabilities` with `methods`.
    pub fn from_methods(methods: &[String]) -> CapabilitiesDocument {
        let has = |name: &str| methods.iter().any(|m| m == name);
        let serves = |fork: Fork, family: Family| {
            method::for_fork(family, fork).is_some_and(|m| has(m.name))
        };
        let supported: Vec<Fork> = Fork::ALL
            .into_iter()
            .filter(|&f| HOT_FAMILIES.iter().all(|&fam| serves(f, fam)))
            .collect();
        let mut fork_scoped = vec!["payloads".to_string(), "forkchoice".to_string()];
        if supported
            .iter()
            .any(|&f| serves(f, Family::BodiesByHash) && serves(f, Family::BodiesByRange))
        {
            fork_scoped.push("bodies".into());
        }
        let blobs: Vec<String> = METHODS
            .iter()
            .filter(|m| m.family == Family::GetBlobs && has(m.name))
            .map(|m| format!("v{}", m.version))
            .collect();
        let mut unscoped = vec!["capabilities".to_string()];
        if has("engine_getClientVersionV1") {
            unscoped.push("identity".into());
        }
        CapabilitiesDocument {
            supported_forks: supported.iter().map(|f| f.name().to_string()).collect(),
            fork_scoped_endpoints: fork_scoped,
            independently_versioned: BTreeMap::from([("blobs".to_string(), blobs)]),
            unscoped_endpoints: unscoped,
            limits: BTreeMap::from([
                ("bodies.max_count".to_string(), MAX_BODIES_REQUEST as u64),
                (
                    "blobs.max_versioned_hashes".to_string(),
                    MAX_BLOBS_REQUEST as u64,
                ),
                (
                    "payload.max_bytes".to_string(),
                    MAX_REQUEST_BODY_SIZE as u64,
                ),
            ]),
        }
    }

    /// The JSON-RPC methods a CL may call on an EL that advertises this document.
    pub fn to_methods(&self) -> Vec<String> {
        let forks: Vec<Fork> = self
            .supported_forks
            .iter()
            .filter_map(|f| f.parse().ok())
            .collect();
        let has_bodies = self.fork_scoped_endpoints.iter().any(|e| e == "bodies");
        let blobs = self
            .independently_versioned
            .get("blobs")
            .cloned()
            .unwrap_or_default();
        METHODS
            .iter()
            .filter(|m| match m.resource {
                Resource::SubmitPayload | Resource::Forkchoice | Resource::GetPayload => forks
                    .iter()
                    .any(|&f| method::for_fork(m.family, f) == Some(m)),
                Resource::BodiesByHash | Resource::BodiesByRange => {
                    has_bodies
                        && forks
                            .iter()
                            .any(|&f| method::for_fork(m.family, f) == Some(m))
                }
                Resource::Blobs(v) => blobs.contains(&format!("v{v}")),
                Resource::Identity => self.unscoped_endpoints.iter().any(|e| e == "identity"),
                // exchangeCapabilities never lists itself.
                Resource::Capabilities => false,
            })
            .map(|m| m.name.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geth_like_method_list_gives_cancun_to_osaka() {
        let methods: Vec<String> = [
            "engine_newPayloadV3",
            "engine_newPayloadV4",
            "engine_forkchoiceUpdatedV3",
            "engine_getPayloadV3",
            "engine_getPayloadV4",
            "engine_getPayloadV5",
            "engine_getPayloadBodiesByHashV1",
            "engine_getPayloadBodiesByRangeV1",
            "engine_getBlobsV1",
            "engine_getBlobsV2",
            "engine_getBlobsV3",
            "engine_getClientVersionV1",
        ]
        .map(String::from)
        .to_vec();
        let doc = CapabilitiesDocument::from_methods(&methods);
        assert_eq!(doc.supported_forks, ["cancun", "prague", "osaka"]);
        assert_eq!(
            doc.fork_scoped_endpoints,
            ["payloads", "forkchoice", "bodies"]
        );
        assert_eq!(doc.independently_versioned["blobs"], ["v1", "v2", "v3"]);
        assert_eq!(doc.unscoped_endpoints, ["capabilities", "identity"]);
        assert_eq!(doc.limits["payload.max_bytes"], 67_108_864);
        assert_eq!(doc.to_methods(), methods);
    }

    #[test]
    fn spec_example_document_parses() {
        let json = r#"{
          "supported_forks": ["paris", "shanghai", "cancun", "prague", "osaka", "amsterdam"],
          "fork_scoped_endpoints": ["payloads", "forkchoice", "bodies"],
          "independently_versioned": { "blobs": ["v1", "v2", "v3", "v4"] },
          "unscoped_endpoints": ["capabilities", "identity"],
          "limits": { "bodies.max_count": 32, "blobs.max_versioned_hashes": 128, "payload.max_bytes": 67108864 }
        }"#;
        let doc: CapabilitiesDocument = serde_json::from_str(json).unwrap();
        let methods = doc.to_methods();
        assert!(methods.contains(&"engine_newPayloadV2".to_string()));
        assert!(methods.contains(&"engine_getPayloadV6".to_string()));
        assert!(methods.contains(&"engine_getBlobsV4".to_string()));
        assert!(!methods.contains(&"engine_newPayloadV1".to_string()));
        assert_eq!(CapabilitiesDocument::from_methods(&methods), doc);
    }
}
