/* Verifies one recorded proof through the C library: usage
 *   verify OPTIONS_JSON METHOD PARAMS_JSON PROOF_FILE NOW [STATE_OUT]
 * prints the verified result (exit 0) or "refused <check>: <message>" (exit 1); with STATE_OUT,
 * saves the trust state, makes a second verifier from it alone and verifies again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sszgate_verifier.h"

static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* The verifier reads at most 32 MiB of proof; a larger file is refused here. */
  uint8_t *buf = (n >= 0 && n <= (32L << 20)) ? malloc(n > 0 ? (size_t)n : 1) : NULL;
  if (!buf) {
    fclose(f);
    return NULL;
  }
  *len = fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

static int verify(sszgate_verifier *v, const char *method, const char *params,
                  const uint8_t *proof, size_t len, uint64_t now) {
  char *result = NULL, *check = NULL;
  int rc = sszgate_verifier_verify(v, method, params, proof, len, now, &result, &check);
  if (rc == 0) {
    printf("%s\n", result);
  } else {
    printf("refused %s: %s\n", check ? check : "-", result);
  }
  sszgate_free_string(result);
  sszgate_free_string(check);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 6) return 64;
  size_t len = 0;
  uint8_t *proof = read_file(argv[4], &len);
  if (!proof) return 66;
  uint64_t now = strtoull(argv[5], NULL, 10);
  char *error = NULL;
  sszgate_verifier *v = sszgate_verifier_new(argv[1], NULL, 0, &error);
  if (!v) {
    printf("error: %s\n", error);
    sszgate_free_string(error);
    return 2;
  }
  int rc = verify(v, argv[2], argv[3], proof, len, now);
  if (rc == 0 && argc > 6) {
    uint8_t *state = NULL;
    size_t state_len = 0;
    if (sszgate_verifier_save_state(v, &state, &state_len) != 0) return 3;
    sszgate_verifier *again = sszgate_verifier_new("{\"network\":\"mainnet\"}", state, state_len, &error);
    sszgate_free_bytes(state, state_len);
    if (!again) return 4;
    rc = verify(again, argv[2], argv[3], proof, len, now);
    sszgate_verifier_free(again);
  }
  /* NULL arguments are errors, not crashes. */
  char *result = NULL;
  if (sszgate_verifier_verify(NULL, NULL, NULL, NULL, 0, 0, &result, NULL) == 0) return 5;
  sszgate_free_string(result);
  sszgate_verifier_free(v);
  free(proof);
  return rc;
}
