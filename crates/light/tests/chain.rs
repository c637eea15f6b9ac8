//! Chain timing comes from the built-in network, not the beacon node: a node that serves no
//! config works with mainnet's; a node that reports another slot time, genesis time or
//! period length is refused naming the field; a node on an unknown chain is taken (with a
//! warning) only when the operator did not name a network; a saved store pins its chain.

mod common;

use serde_json::{Value, json};
use sszgate_light::client::{Network, resolve_chain_spec};
use sszgate_light::spec::ChainSpec;
use sszgate_light::store::LightClientStore;
use sszgate_light::types::Bootstrap;
use sszgate_light::{BeaconApi, LightError, RecordedBeaconApi, persist};

/// A node answering its config and genesis with these documents.
struct ConfigNode {
    config: Value,
    genesis: Value,
}

impl BeaconApi for ConfigNode {
    async fn get_json(&self, path: &str, _max: usize) -> Result<Value, LightError> {
        match path {
            "/eth/v1/config/spec" => Ok(json!({ "data": self.config })),
            "/eth/v1/beacon/genesis" => Ok(json!({ "data": self.genesis })),
            _ => Err(LightError::NotFound { path: path.into() }),
        }
    }

    async fn get_ssz(&self, path: &str, _max: usize) -> Result<Vec<u8>, LightError> {
        Err(LightError::NotFound { path: path.into() })
    }
}

/// Mainnet's config and genesis as a beacon node serves them.
fn mainnet_node() -> ConfigNode {
    let mut config = json!({"SECONDS_PER_SLOT": "12", "SLOTS_PER_EPOCH": "32",
        "EPOCHS_PER_SYNC_COMMITTEE_PERIOD": "256", "GENESIS_FORK_VERSION": "0x00000000"});
    let names = ["ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU"];
    let epochs = ["74240", "144896", "194048", "269568", "364032", "411392"];
    for (i, name) in names.iter().enumerate() {
        config[format!("{name}_FORK_VERSION")] = format!("0x0{}000000", i + 1).into();
        config[format!("{name}_FORK_EPOCH")] = epochs[i].into();
    }
    ConfigNode {
        config,
        genesis: json!({"genesis_time": "1606824023",
            "genesis_validators_root": "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95"}),
    }
}

fn refused_field(err: LightError) -> &'static str {
    match err {
        LightError::FieldMismatch {
            check: "chain_spec",
            field,
            ..
        } => field,
        other => panic!("not a chain_spec mismatch: {other}"),
    }
}

/// The recorded mainnet cases serve no config routes: mainnet's built-in parameters are used.
#[tokio::test]
async fn a_node_without_config_routes_gets_the_built_in_mainnet() {
    let api = RecordedBeaconApi::new(common::data_dir().join("eth_blockNumber_electra"));
    let spec = resolve_chain_spec(&api, Network::Default).await.unwrap();
    assert_eq!(spec, ChainSpec::mainnet());
    let named = resolve_chain_spec(&api, Network::Named(ChainSpec::mainnet()))
        .await
        .unwrap();
    assert_eq!(named, ChainSpec::mainnet());
    let err = resolve_chain_spec(&api, Network::Node).await.unwrap_err();
    assert!(matches!(err, LightError::Config { .. }), "{err}");
}

/// A node reporting another slot time, genesis time or period length is refused at start,
/// the field named; the honest node agrees.
#[tokio::test]
async fn a_node_with_other_timing_is_refused_naming_the_field() {
    let honest = mainnet_node();
    for network in [Network::Default, Network::Named(ChainSpec::mainnet())] {
        let spec = resolve_chain_spec(&honest, network).await.unwrap();
        assert_eq!(spec, ChainSpec::mainnet());
    }
    let cases = [
        ("SECONDS_PER_SLOT", "6", false),
        ("EPOCHS_PER_SYNC_COMMITTEE_PERIOD", "128", false),
        ("genesis_time", "1606824024", true),
    ];
    for (key, value, in_genesis) in cases {
        let mut node = mainnet_node();
        let doc = if in_genesis {
            &mut node.genesis
        } else {
            &mut node.config
        };
        doc[key] = value.into();
        for network in [Network::Default, Network::Named(ChainSpec::mainnet())] {
            let err = resolve_chain_spec(&node, network).await.unwrap_err();
            assert!(
                err.to_string().contains(&format!("node says {value}")),
                "{err}"
            );
            assert_eq!(refused_field(err), key);
        }
    }
}

/// A node on a chain that is not built in (a devnet) is taken when no network is named, and
/// refused when mainnet is named.
#[tokio::test]
async fn an_unknown_chain_is_the_nodes_only_when_no_network_is_named() {
    let mut devnet = mainnet_node();
    devnet.genesis["genesis_validators_root"] = format!("0x{}", "ab".repeat(32)).into();
    devnet.genesis["genesis_time"] = "1700000000".into();
    let spec = resolve_chain_spec(&devnet, Network::Default).await.unwrap();
    assert_eq!(
        (spec.name.as_str(), spec.genesis_time),
        ("custom", 1700000000)
    );
    let err = resolve_chain_spec(&devnet, Network::Named(ChainSpec::mainnet()))
        .await
        .unwrap_err();
    assert_eq!(refused_field(err), "genesis_validators_root");
}

/// A store saved under mainnet's parameters is refused when started with another slot time
/// (same genesis root), naming the field.
#[test]
fn a_saved_store_pins_its_chain_parameters() {
    let spec = ChainSpec::mainnet();
    let bootstrap = Bootstrap::from_ssz(
        &spec,
        &common::read_prefixed(
            "eth_blockNumber_electra",
            "eth_v1_beacon_light_client_bootstrap_",
        ),
    )
    .unwrap();
    let store =
        LightClientStore::bootstrap(spec.clone(), bootstrap.header.beacon.root(), &bootstrap)
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lc.json");
    persist::save(&store, &path).unwrap();
    assert!(persist::load(&spec, &path).unwrap().is_some());
    let other = ChainSpec {
        seconds_per_slot: 6,
        ..spec
    };
    let err = persist::load(&other, &path).unwrap_err().to_string();
    assert!(
        err.contains("SECONDS_PER_SLOT") && err.contains("6"),
        "{err}"
    );
}
