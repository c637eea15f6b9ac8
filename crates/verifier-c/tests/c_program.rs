//! The C library from C: a program compiled with the system C compiler against the header and
//! the static library verifies colibri's recorded mainnet proofs of the method families this
//! build holds (its cargo features), saves its state, verifies again from the state alone,
//! reports a changed proof as refused with the check's name, and refuses a method of a family
//! left out by the method's name. `cargo test -p sszgate-verifier-c` runs it with every
//! family; `--no-default-features` as the receipts-only library.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

// The recorded-answer comparison of sszgate-verifier's tests.
#[path = "../../verifier/tests/common/recorded.rs"]
mod recorded;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The static library cargo built beside this test (`target/<profile>/deps/`, where the test
/// build puts every crate type of the library).
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().join("libsszgate_verifier_c.a")
}

/// Compiles tests/c/verify.c to a file named for `test` (tests run in parallel); `None`
/// (loudly, or a failure under CI=true) without a compiler.
fn program(test: &str) -> Option<PathBuf> {
    let out = std::env::temp_dir().join(format!("sszgate-verify-c-{}-{test}", std::process::id()));
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

/// One recorded proof with sync data: it verifies from its trusted checkpoint alone.
struct Case {
    dir: PathBuf,
    expected: Value,
}

impl Case {
    fn load(name: &str) -> Case {
        let dir = crate_dir().join("../proof/testdata/colibri").join(name);
        // A recorded answer is a few kB; more than a MiB is a broken file, not read whole.
        let mut text = String::new();
        let file = std::fs::File::open(dir.join("expected.json")).unwrap();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, 1 << 20), &mut text).unwrap();
        Case {
            expected: serde_json::from_str(&text).unwrap(),
            dir,
        }
    }

    fn method(&self) -> &str {
        self.expected["method"].as_str().unwrap()
    }

    fn proof(&self) -> PathBuf {
        self.dir.join("proof.ssz")
    }

    /// Runs the C program on `proof` (this case's, or a changed copy): exit code and the
    /// lines it printed.
    fn run(&self, program: &Path, proof: &Path, extra: &[&str]) -> (i32, String) {
        let slot = self.expected["decoded"]["checks"]["signature"]["signed_slot"]
            .as_u64()
            .unwrap();
        let now = 1_606_824_023 + (slot + 1) * 12;
        let checkpoint = &self.expected["trusted_checkpoint"];
        let options = serde_json::json!({"network": "mainnet", "checkpoint": checkpoint});
        let out = Command::new(program)
            .arg(options.to_string())
            .arg(self.method())
            .arg(self.expected["params"].to_string())
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

    fn assert_answer(&self, answer: &Value) {
        let case = self.dir.display().to_string();
        recorded::assert_recorded(&case, &self.expected, answer);
    }
}

/// Whether this build holds the family of `method` (the cargo features of this crate, which
/// are those of sszgate-verifier).
fn built(method: &str) -> bool {
    match method {
        "eth_getTransactionReceipt" => true,
        "eth_blockNumber" => cfg!(feature = "blocks"),
        other => panic!("no family known for {other}"),
    }
}

/// Verifies `case` through C, again from the saved state, and refuses a changed copy.
fn verifies_and_refuses_a_changed_copy(program: &Path, case: &Case) {
    let (code, out) = case.run(program, &case.proof(), &["save"]);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    for answer in &lines {
        case.assert_answer(answer);
    }
    let mut changed = std::fs::read(case.proof()).unwrap();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    let name = format!(
        "sszgate-changed-{}-{}.ssz",
        std::process::id(),
        case.method()
    );
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, changed).unwrap();
    let (code, out) = case.run(program, &path, &[]);
    let _ = std::fs::remove_file(path);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("refused "), "{out}");
}

#[test]
fn a_c_program_verifies_the_families_built_in_and_refuses_a_changed_proof() {
    let Some(program) = program("families") else {
        return;
    };
    let mut verified = Vec::new();
    for name in ["syncdata_deneb_receipt", "syncdata_electra_blocknumber"] {
        let case = Case::load(name);
        if built(case.method()) {
            verifies_and_refuses_a_changed_copy(&program, &case);
            verified.push(case.method().to_string());
        }
    }
    let _ = std::fs::remove_file(program);
    assert!(
        verified.iter().any(|m| m == "eth_getTransactionReceipt"),
        "every build verifies receipts: {verified:?}"
    );
}

/// A method whose family the build leaves out is refused as unsupported, naming the method,
/// with no check (the proof is not read); with the family built it verifies (above).
#[cfg(not(feature = "blocks"))]
#[test]
fn a_c_program_is_refused_a_method_left_out_by_name() {
    let case = Case::load("syncdata_electra_blocknumber");
    assert!(!built(case.method()));
    let Some(program) = program("left-out") else {
        return;
    };
    let (code, out) = case.run(&program, &case.proof(), &[]);
    let _ = std::fs::remove_file(program);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("refused -: "), "no check named: {out}");
    assert!(out.contains("eth_blockNumber"), "the method named: {out}");
}
