/*
 * sszgate_verifier.h — the sszgate proof verifier as a C library.
 *
 * Checks a prover's SSZ proofs (colibri.stateless's format and sszgate's extensions) for
 * eth_* JSON-RPC methods against the beacon chain's sync committee, starting from a trusted
 * checkpoint or a saved state. No I/O, no threads of its own: the caller fetches proofs,
 * keeps the state bytes where it likes and gives the clock.
 *
 * Memory: every string and byte buffer the library returns is the caller's to free, with
 * sszgate_free_string / sszgate_free_bytes. All functions are safe to call with NULL pointers
 * (they fail with an error). A verifier is not thread-safe: use one per thread, or lock.
 *
 * Panics: built with cargo's `embedded` (or `release`) profile, an internal panic is caught and
 * returned as an error (code 2, or NULL from sszgate_verifier_new); built with
 * `embedded-abort`, the smaller library, it aborts the process instead.
 */
#ifndef SSZGATE_VERIFIER_H
#define SSZGATE_VERIFIER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A proof verifier for one chain. */
typedef struct sszgate_verifier sszgate_verifier;

/**
 * Makes a verifier. `options_json`: {"network": "mainnet"|"sepolia"|"hoodi"|{custom},
 * "checkpoint": "0x…", "now": unix_seconds, "maxHeadAge": n, "minParticipation": n,
 * "acceptIncompleteLogs": bool (take eth_getLogs in colibri's form, which cannot show that no
 * block was left out; off by default)}.
 * `state`/`state_len`: bytes from sszgate_verifier_save_state, or NULL/0.
 * Returns NULL on error and sets *error (if error is not NULL) to a message.
 */
sszgate_verifier *sszgate_verifier_new(const char *options_json, const uint8_t *state,
                                       size_t state_len, char **error);

/**
 * Verifies `proof` for `method(params_json)` at `now` (Unix seconds; ignored if the options
 * fixed the clock). Returns 0 and sets *result to the verified result's JSON text; returns
 * non-zero and sets *result to the error message, and *check (if not NULL) to the failed
 * check's name or NULL.
 */
int sszgate_verifier_verify(sszgate_verifier *verifier, const char *method,
                            const char *params_json, const uint8_t *proof, size_t proof_len,
                            uint64_t now, char **result, char **check);

/** The trust state as bytes (*out, *out_len), for sszgate_verifier_new. 0 on success. */
int sszgate_verifier_save_state(const sszgate_verifier *verifier, uint8_t **out, size_t *out_len);

/** What to tell a prover about this verifier (the `c4` field). 0 on success. */
int sszgate_verifier_client_state(const sszgate_verifier *verifier, uint8_t **out,
                                  size_t *out_len);

/** Frees a verifier (NULL is ignored). */
void sszgate_verifier_free(sszgate_verifier *verifier);

/** Frees a string the library returned (NULL is ignored). */
void sszgate_free_string(char *s);

/** Frees a byte buffer the library returned (NULL is ignored). */
void sszgate_free_bytes(uint8_t *bytes, size_t len);

#ifdef __cplusplus
}
#endif

#endif
