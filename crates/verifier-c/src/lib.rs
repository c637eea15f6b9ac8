//! The proof verifier behind a C ABI (`include/sszgate_verifier.h`): `sszgate-verifier`'s
//! facade, its strings and buffers handed over as owned C allocations that the caller frees
//! with this library's own free functions. Every entry point checks its pointers and catches
//! panics, so a bad call is an error code, never undefined behaviour past the boundary (built
//! with the `embedded-abort` profile, `panic = "abort"`, a panic aborts the process instead).
//!
//! Not here: what a proof means (the facade and the proof core).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use sszgate_verifier::{Verifier, VerifierError};

/// A verifier as C sees it (opaque).
pub struct SszgateVerifier(Verifier);

/// An owned C string for `text` (interior NULs replaced, so it always converts).
fn c_string(text: &str) -> *mut c_char {
    CString::new(text.replace('\0', " "))
        .map(CString::into_raw)
        .unwrap_or(ptr::null_mut())
}

/// Writes `text` to `*out` when `out` is not NULL.
///
/// # Safety
/// `out` is NULL or valid for one write.
unsafe fn put(out: *mut *mut c_char, text: Option<&str>) {
    if !out.is_null() {
        // SAFETY: the caller passes a valid pointer or NULL (checked).
        unsafe { *out = text.map_or(ptr::null_mut(), c_string) };
    }
}

/// A `&str` from a C string, or an error naming the argument.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char, what: &str) -> Result<&'a str, String> {
    if s.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: checked non-NULL; NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|e| format!("{what} is not UTF-8: {e}"))
}

/// A byte slice from a pointer and length (empty for NULL/0).
///
/// # Safety
/// `p` is NULL or valid for `len` bytes.
unsafe fn slice<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// Hands `bytes` to C as an owned buffer.
///
/// # Safety
/// `out` and `out_len` are valid for one write each.
unsafe fn give_bytes(bytes: Vec<u8>, out: *mut *mut u8, out_len: *mut usize) -> c_int {
    if out.is_null() || out_len.is_null() {
        return 1;
    }
    let boxed = bytes.into_boxed_slice();
    let len = boxed.len();
    // SAFETY: both checked non-NULL.
    unsafe {
        *out_len = len;
        *out = Box::into_raw(boxed).cast::<u8>();
    }
    0
}

/// See `sszgate_verifier_new` in the header.
///
/// # Safety
/// As the header says: `options_json` NUL-terminated, `state` valid for `state_len` bytes or
/// NULL, `error` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_verifier_new(
    options_json: *const c_char,
    state: *const u8,
    state_len: usize,
    error: *mut *mut c_char,
) -> *mut SszgateVerifier {
    let made = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let options = unsafe { text(options_json, "options_json") }?;
        let state = (!state.is_null()).then(|| unsafe { slice(state, state_len) });
        Verifier::new(options, state).map_err(|e| e.to_string())
    }));
    match made {
        Ok(Ok(v)) => {
            // SAFETY: the caller's contract for `error`.
            unsafe { put(error, None) };
            Box::into_raw(Box::new(SszgateVerifier(v)))
        }
        Ok(Err(e)) => {
            unsafe { put(error, Some(&e)) };
            ptr::null_mut()
        }
        Err(_) => {
            unsafe {
                put(
                    error,
                    Some("internal error (panic) while making the verifier"),
                )
            };
            ptr::null_mut()
        }
    }
}

/// See `sszgate_verifier_verify` in the header.
///
/// # Safety
/// As the header says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_verifier_verify(
    verifier: *mut SszgateVerifier,
    method: *const c_char,
    params_json: *const c_char,
    proof: *const u8,
    proof_len: usize,
    now: u64,
    result: *mut *mut c_char,
    check: *mut *mut c_char,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL checked; otherwise a pointer this library made (the caller's contract).
        let v = unsafe { verifier.as_mut() }.ok_or((None, "verifier is NULL".to_string()))?;
        let method = unsafe { text(method, "method") }.map_err(|e| (None, e))?;
        let params = unsafe { text(params_json, "params_json") }.map_err(|e| (None, e))?;
        let proof = unsafe { slice(proof, proof_len) };
        v.0.verify(method, params, proof, now).map_err(|e| match e {
            VerifierError::Refused { check, message } => (check, message),
            other => (None, other.to_string()),
        })
    }));
    let (code, text_out, check_out) = match outcome {
        Ok(Ok(answer)) => (0, answer, None),
        Ok(Err((name, message))) => (1, message, name),
        Err(_) => (
            2,
            "internal error (panic) while verifying".to_string(),
            None,
        ),
    };
    // SAFETY: the caller's contract for `result` and `check`.
    unsafe {
        put(result, Some(&text_out));
        put(check, check_out.as_deref());
    }
    code
}

/// See `sszgate_verifier_save_state` in the header.
///
/// # Safety
/// As the header says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_verifier_save_state(
    verifier: *const SszgateVerifier,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> c_int {
    // SAFETY: NULL checked; otherwise a pointer this library made.
    match unsafe { verifier.as_ref() } {
        Some(v) => unsafe { give_bytes(v.0.save_state(), out, out_len) },
        None => 1,
    }
}

/// See `sszgate_verifier_client_state` in the header.
///
/// # Safety
/// As the header says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_verifier_client_state(
    verifier: *const SszgateVerifier,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> c_int {
    // SAFETY: NULL checked; otherwise a pointer this library made.
    match unsafe { verifier.as_ref() } {
        Some(v) => unsafe { give_bytes(v.0.client_state(), out, out_len) },
        None => 1,
    }
}

/// See `sszgate_verifier_free` in the header.
///
/// # Safety
/// `verifier` is NULL or from `sszgate_verifier_new`, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_verifier_free(verifier: *mut SszgateVerifier) {
    if !verifier.is_null() {
        // SAFETY: made by Box::into_raw in sszgate_verifier_new.
        drop(unsafe { Box::from_raw(verifier) });
    }
}

/// See `sszgate_free_string` in the header.
///
/// # Safety
/// `s` is NULL or a string this library returned, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_free_string(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: made by CString::into_raw.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// See `sszgate_free_bytes` in the header.
///
/// # Safety
/// `bytes` is NULL or a buffer this library returned with `len`, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sszgate_free_bytes(bytes: *mut u8, len: usize) {
    if !bytes.is_null() {
        // SAFETY: made by Box::into_raw of a boxed slice of `len` bytes.
        drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(bytes, len)) });
    }
}
