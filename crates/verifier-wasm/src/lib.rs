//! The proof verifier for JavaScript: `sszgate-verifier`'s facade bound with wasm-bindgen. The
//! npm package `sszgate-verifier` (its JS entry is `js/`, built by `scripts/build-js.sh`)
//! wraps this class in `createVerifier`/`createProvider`; an error thrown here is a JS `Error`
//! whose `check` property names the failed check (absent for decode, parameter and
//! unsupported-method errors).
//!
//! Not here: fetching proofs (the package's provider), the clock (the package passes
//! `Date.now()` unless the options fix it).

use std::borrow::Cow;
use std::ops::Range;

use js_sys::{Error, Reflect, Uint8Array};
use sszgate_verifier::{Options, SavedState, Verifier, VerifierError};
use wasm_bindgen::prelude::*;

/// A JS `Error` for `e`, with `check` set when a check failed.
fn js_error(e: VerifierError) -> JsValue {
    let error = Error::new(&e.to_string());
    if let VerifierError::Refused {
        check: Some(check), ..
    } = &e
    {
        // Setting a property on a fresh Error object cannot fail.
        let _ = Reflect::set(&error, &"check".into(), &check.into());
    }
    error.into()
}

/// Saved state in a JS array, read in parts: a verifier made anew from a state this module
/// read before copies its head and digests into WASM, not its entries (74 kB each).
struct JsSaved {
    array: Uint8Array,
    len: usize,
}

impl SavedState for JsSaved {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, range: Range<usize>) -> Cow<'_, [u8]> {
        // Within `len` (the trait's promise), so within a JS array's u32 length.
        let part = self.array.subarray(range.start as u32, range.end as u32);
        Cow::Owned(part.to_vec())
    }
}

/// A verifier's options, read once (the package keeps the last one and makes its verifiers
/// with it).
#[wasm_bindgen]
pub struct WasmOptions(Options);

#[wasm_bindgen]
impl WasmOptions {
    /// Reads `options` (JSON text).
    #[wasm_bindgen(constructor)]
    pub fn new(options: &str) -> Result<WasmOptions, JsValue> {
        Options::parse(options).map(WasmOptions).map_err(js_error)
    }
}

/// A proof verifier holding the committee keys it has learned.
#[wasm_bindgen]
pub struct WasmVerifier(Verifier);

#[wasm_bindgen]
impl WasmVerifier {
    /// A verifier from `options` (read by [`WasmOptions`]) and an optional saved `state`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: &WasmOptions, state: Option<Uint8Array>) -> Result<WasmVerifier, JsValue> {
        let saved = state.map(|array| JsSaved {
            len: array.length() as usize,
            array,
        });
        Verifier::with_options(&options.0, saved.as_ref().map(|s| s as &dyn SavedState))
            .map(WasmVerifier)
            .map_err(js_error)
    }

    /// The verified result of `method(params)` as JSON text; `params` is JSON text, `now` Unix
    /// seconds.
    pub fn verify(
        &mut self,
        method: &str,
        params: &str,
        proof: &[u8],
        now: f64,
    ) -> Result<String, JsValue> {
        let now = if now.is_finite() && now > 0.0 {
            now as u64
        } else {
            0
        };
        self.0.verify(method, params, proof, now).map_err(js_error)
    }

    /// The trust state as bytes, for a later `new(options, state)`.
    #[wasm_bindgen(js_name = saveState)]
    pub fn save_state(&self) -> Vec<u8> {
        self.0.save_state()
    }

    /// What to tell a prover about this verifier (the `c4` field).
    #[wasm_bindgen(js_name = clientState)]
    pub fn client_state(&self) -> Vec<u8> {
        self.0.client_state()
    }

    /// Trusts `keys` (512 compressed keys) as the committee of `period` (see the facade).
    #[wasm_bindgen(js_name = addCommitteeKeys)]
    pub fn add_committee_keys(&mut self, period: u32, keys: &[u8]) -> Result<(), JsValue> {
        self.0
            .add_committee_keys(u64::from(period), keys)
            .map_err(js_error)
    }

    /// Knows `code` by its hash, for eth_call proofs that leave it out.
    #[wasm_bindgen(js_name = addCode)]
    pub fn add_code(&mut self, code: &[u8]) {
        self.0.add_code(code);
    }

    /// The sync-committee periods whose keys the verifier holds.
    pub fn periods(&self) -> Vec<u32> {
        self.0.periods().into_iter().map(|p| p as u32).collect()
    }
}

/// The methods a proof can answer, as JSON text.
#[wasm_bindgen]
pub fn methods() -> String {
    format!("{:?}", sszgate_verifier::METHODS)
}
