//! The embeddable verifier's dependency tree has no async runtime and no HTTP stack: `cargo
//! tree` of `sszgate-verifier` (normal dependencies, for the host and for wasm32) names none
//! of tokio, hyper, reqwest or sszgate's serving crates.

use std::process::Command;

fn tree(target: Option<&str>) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "tree",
        "-p",
        "sszgate-verifier",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]);
    if let Some(target) = target {
        cmd.args(["--target", target]);
    }
    let out = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_verification_core_has_no_runtime_and_no_http() {
    for target in [None, Some("wasm32-unknown-unknown")] {
        let tree = tree(target);
        assert!(tree.contains("sszgate-proof"), "{tree}");
        for crate_name in [
            "tokio ",
            "hyper ",
            "reqwest ",
            "sszgate-serve ",
            "sszgate-rpc ",
            "c-kzg ",
            "secp256k1-sys ",
        ] {
            assert!(
                !tree.lines().any(|l| l.starts_with(crate_name)),
                "{crate_name}in the core's tree ({target:?}):\n{tree}"
            );
        }
    }
}
