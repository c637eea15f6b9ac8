//! A verified answer against a colibri vector's recorded result, shared by the verifier's tests
//! and the C library's (which includes this file by path): whole, or for a receipt the fields
//! a proof binds that sszgate renders as colibri does (crates/proof/README.md lists the
//! others).
//!
//! Not here: reading the vectors, making verifiers.

use serde_json::Value;

/// Panics naming `case` and the field unless `answer` is `expected`'s recorded result.
pub(crate) fn assert_recorded(case: &str, expected: &Value, answer: &Value) {
    let recorded = &expected["result"];
    if expected["method"] != "eth_getTransactionReceipt" {
        assert_eq!(answer, recorded, "{case}");
        return;
    }
    for field in [
        "transactionHash",
        "blockHash",
        "blockNumber",
        "from",
        "to",
        "status",
    ] {
        assert!(
            answer[field].is_string(),
            "{case}: {field} answered: {answer}"
        );
        assert_eq!(answer[field], recorded[field], "{case}: {field}");
    }
    let count = |v: &Value| v["logs"].as_array().map(Vec::len);
    assert_eq!(count(answer), count(recorded), "{case}: logs");
}
