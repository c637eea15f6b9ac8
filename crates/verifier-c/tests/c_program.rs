//! The C library from C: a program compiled with the system C compiler against the header and
//! the static library verifies colibri's recorded mainnet proof, saves its state, verifies again
//! from the state alone, and reports a changed proof as refused with the check's name.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The static library cargo built beside this test (`target/<profile>/deps/`, where the test
/// build puts every crate type of the library).
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().join("libsszgate_verifier_c.a")
}

/// Compiles tests/c/verify.c; `None` (loudly, or a failure under CI=true) without a compiler.
fn program() -> Option<PathBuf> {
    let out = std::env::temp_dir().join(format!("sszgate-verify-c-{}", std::process::id()));
    let built = Command::new("cc")
        .arg(crate_dir().join("tests/c/verify.c"))
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(static_lib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&out)
        .status();
    match built {
        Ok(s) if s.success() => Some(out),
        other => {
            let why = format!("cannot compile the C test program: {other:?}");
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
            eprintln!("!!! SKIPPED: {why}");
            None
        }
    }
}

fn vector(file: &str) -> PathBuf {
    crate_dir()
        .join("../proof/testdata/colibri/syncdata_electra_blocknumber")
        .join(file)
}

fn run(program: &Path, proof: &Path, extra: &[&str]) -> (i32, String) {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(vector("expected.json")).unwrap()).unwrap();
    let slot = expected["decoded"]["checks"]["signature"]["signed_slot"]
        .as_u64()
        .unwrap();
    let now = 1_606_824_023 + (slot + 1) * 12;
    let options =
        serde_json::json!({"network": "mainnet", "checkpoint": expected["trusted_checkpoint"]});
    let out = Command::new(program)
        .arg(options.to_string())
        .arg(expected["method"].as_str().unwrap())
        .arg(expected["params"].to_string())
        .arg(proof)
        .arg(now.to_string())
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn a_c_program_verifies_a_recorded_proof_and_refuses_a_changed_one() {
    let Some(program) = program() else { return };
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(vector("expected.json")).unwrap()).unwrap();
    let (code, out) = run(&program, &vector("proof.ssz"), &["save"]);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        vec![expected["result"].clone(), expected["result"].clone()]
    );
    let mut changed = std::fs::read(vector("proof.ssz")).unwrap();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    let path = std::env::temp_dir().join(format!("sszgate-changed-{}.ssz", std::process::id()));
    std::fs::write(&path, changed).unwrap();
    let (code, out) = run(&program, &path, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("refused "), "{out}");
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(program);
}
