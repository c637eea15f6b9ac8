// Every colibri vector (crates/proof/testdata/colibri, the same as ../shared/vectors/colibri)
// through the built package (SSZGATE_VERIFIER_PKG, else target/js/sszgate-verifier), with the
// trust crates/proof/tests/common/mod.rs gives each case: the committee keys recorded beside it
// (`sync_committee_<period>.pubkeys`), the trusted checkpoint of the sync-data cases, the clock
// at the case's time. Each answers as recorded, compared as crates/proof/tests/verify.rs does
// where sszgate renders on purpose differently; colibri's incomplete eth_getLogs form is refused
// (check `completeness`); flipped, cut and extended proofs (the families of
// crates/proof/tests/mutations.rs) are refused, naming the check, or leave the answer as it was;
// a checkpoint-only saved state is brought forward by a proof's sync data.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const pkgDir = process.env.SSZGATE_VERIFIER_PKG ?? path.join(root, 'target/js/sszgate-verifier');
const { createVerifier } = await import(pathToFileURL(path.join(pkgDir, 'index.js')).href);

const vectors = path.join(root, 'crates/proof/testdata/colibri');
const GENESIS = 1606824023;
/** The checks a refusal may name (sszgate_proof::Check::name). */
const CHECKS = ['version', 'proof_kind', 'body_root', 'header_chain', 'participation', 'committee',
  'signature', 'sync_data', 'account_proof', 'storage_proof', 'receipt_proof', 'receipt_data',
  'transaction', 'request', 'code', 'tag', 'completeness'];
/** Fields a receipt or log proof does not bind (sszgate_proof::receipts::UNBOUND_*). */
const UNBOUND = ['gasUsed', 'effectiveGasPrice', 'blobGasPrice', 'logIndex'];
/** Keys sszgate answers with that colibri's rendering leaves out (sszgate_rpc::colibri). */
const STANDARD_ONLY = ['size', 'blockTimestamp', 'requestsHash', 'address', 'contractAddress',
  'maxFeePerBlobGas'];
/** colibri's 32-byte words that sszgate, as geth, writes as quantities. */
const QUANTITIES = ['r', 's', 'value'];

async function caseNames() {
  const names = (await readdir(vectors)).filter((n) => existsSync(path.join(vectors, n, 'proof.ssz')));
  return names.sort();
}

/** A case's expectation, proof and clock. */
async function load(name) {
  const dir = path.join(vectors, name);
  const expected = JSON.parse(await readFile(path.join(dir, 'expected.json'), 'utf8'));
  const proof = new Uint8Array(await readFile(path.join(dir, 'proof.ssz')));
  const slot = expected.decoded?.checks?.signature?.signed_slot;
  const now = slot === undefined ? undefined : GENESIS + (slot + 1) * 12;
  return { name, dir, expected, proof, now };
}

/**
 * A verifier with the case's trust. The package needs a checkpoint or a state to be made; a case
 * trusted by its committee keys alone gets an unrelated root, which it never uses (its keys
 * cover the proof's period).
 */
async function verifierFor(c) {
  const checkpoint = c.expected.trusted_checkpoint ?? '0x' + '11'.repeat(32);
  const v = await createVerifier({ network: 'mainnet', checkpoint, now: c.now });
  for (const file of await readdir(c.dir)) {
    const m = file.match(/^sync_committee_(\d+)\.pubkeys$/);
    if (m) v.addCommitteeKeys(Number(m[1]), new Uint8Array(await readFile(path.join(c.dir, file))));
  }
  return v;
}

/** colibri's recorded result for `method` as sszgate answers it (crates/proof/tests/verify.rs
 *  `adjusted`): receipts and logs without the fields their proofs do not bind. */
function expectedResult(method, recorded, ours) {
  const drop = ['eth_getTransactionReceipt', 'eth_getLogs'].includes(method) ? UNBOUND : [];
  return adjusted(recorded, ours, '', drop);
}

function adjusted(recorded, ours, key, drop) {
  if (Array.isArray(recorded)) {
    return recorded.map((r, i) => adjusted(r, Array.isArray(ours) ? ours[i] : undefined, '', drop));
  }
  if (recorded === null || typeof recorded !== 'object') {
    if (QUANTITIES.includes(key) && typeof recorded === 'string') return '0x' + BigInt(recorded).toString(16);
    return recorded;
  }
  const out = {};
  for (const [k, v] of Object.entries(recorded)) {
    if (drop.includes(k)) continue;
    // The execution layer's withdrawals root, not colibri's SSZ root (spec §15 item 10).
    if (k === 'withdrawalsRoot') {
      assert.notEqual(v, ours?.[k], 'colibri writes an SSZ withdrawals root');
      out[k] = ours[k];
      continue;
    }
    out[k] = adjusted(v, ours?.[k], k, drop);
  }
  for (const k of STANDARD_ONLY) if (ours && k in ours && !(k in out)) out[k] = ours[k];
  return out;
}

function isRefusal(e) {
  return e instanceof Error && e.message.length > 0 && (e.check === undefined || CHECKS.includes(e.check));
}

test('every colibri vector verifies to its recorded result through the package', async () => {
  const names = await caseNames();
  assert.equal(names.length, 17, 'the 17 vectors of the spec');
  const verified = [];
  for (const name of names) {
    const c = await load(name);
    const v = await verifierFor(c);
    if (c.expected.method === 'eth_getLogs') continue; // the next test
    if (name === 'eth_call1') continue; // its code is not in the proof: the test after next
    const ours = v.verify(c.expected.method, c.expected.params, c.proof);
    assert.deepEqual(ours, expectedResult(c.expected.method, c.expected.result, ours), name);
    verified.push(name);
  }
  assert.equal(verified.length, names.length - 2);
});

test("colibri's eth_getLogs form, which cannot show completeness, is refused by default", async () => {
  const c = await load('eth_getLogs1');
  const v = await verifierFor(c);
  assert.throws(() => v.verify(c.expected.method, c.expected.params, c.proof),
    (e) => e.check === 'completeness' && /complete/i.test(e.message));
});

test('eth_call1 (code left out, as colibri cached it) is refused without its code, verifies with it added', async () => {
  const c = await load('eth_call1');
  const v = await verifierFor(c);
  // colibri's verifier took this code from its own cache; the package knows none until told.
  assert.throws(() => v.verify(c.expected.method, c.expected.params, c.proof), /code/);
  const shipped = await load('eth_call1_include_code');
  assert.deepEqual(shipped.expected.params, c.expected.params, 'the same call');
  const w = await verifierFor(shipped);
  assert.deepEqual(w.verify(c.expected.method, c.expected.params, shipped.proof), c.expected.result);
  // colibri's code cache of the recording (../shared/data/colibri/eth_call1/code_<hash>), added
  // with addCode: now the proof without the code verifies (each code is checked by its hash).
  const recorded = path.resolve(root, '../shared/data/colibri/eth_call1');
  const files = (await readdir(recorded)).filter((f) => f.startsWith('code_'));
  assert.equal(files.length, 2, 'the recording caches two contracts');
  for (const f of files) v.addCode(new Uint8Array(await readFile(path.join(recorded, f))));
  assert.deepEqual(v.verify(c.expected.method, c.expected.params, c.proof), c.expected.result);
});

/** `count` positions spread over `length` bytes. */
const spread = (length, count) => Array.from({ length: count }, (_, i) => Math.floor((i * length) / count));

test('flipped bytes are refused naming the check, or leave the answer as it was', async () => {
  let refused = 0;
  let named = 0;
  for (const name of await caseNames()) {
    if (name === 'eth_getLogs1' || name === 'eth_call1') continue;
    const c = await load(name);
    // One verifier for all of a case's flips: a refused proof leaves its trust as it was.
    const v = await verifierFor(c);
    const answer = v.verify(c.expected.method, c.expected.params, c.proof);
    for (const at of spread(c.proof.length, 20)) {
      const bad = c.proof.slice();
      bad[at] ^= 1;
      let result;
      try {
        result = v.verify(c.expected.method, c.expected.params, bad);
      } catch (e) {
        assert.ok(isRefusal(e), `${name}: byte ${at}: ${e}`);
        refused += 1;
        if (e.check) named += 1;
        continue;
      }
      assert.deepEqual(result, answer, `${name}: byte ${at} flipped changed the verified answer`);
    }
  }
  assert.ok(refused > 200, `${refused} flips refused`);
  assert.ok(named > refused / 2, `${named} of ${refused} refusals name a check`);
});

test('cut and extended proofs are refused', async () => {
  for (const name of await caseNames()) {
    if (name === 'eth_call1') continue;
    const c = await load(name);
    const v = await verifierFor(c);
    const n = c.proof.length;
    const changed = [1, 32, 33, Math.floor(n / 2), n - 1].map((cut) => [`cut ${cut}`, c.proof.subarray(0, n - cut)]);
    for (const extra of [1, 4, 32]) {
      const long = new Uint8Array(n + extra);
      long.set(c.proof);
      changed.push([`+${extra}`, long]);
    }
    for (const [how, bytes] of changed) {
      assert.throws(() => v.verify(c.expected.method, c.expected.params, bytes), isRefusal, `${name}: ${how}`);
    }
  }
});

test("a checkpoint-only saved state is brought forward by a proof's sync data", async () => {
  for (const name of ['syncdata_deneb_receipt', 'syncdata_electra_blocknumber']) {
    const c = await load(name);
    const fresh = await createVerifier({ network: 'mainnet', checkpoint: c.expected.trusted_checkpoint, now: c.now });
    const saved = fresh.saveState();
    const v = await createVerifier({ network: 'mainnet', state: saved, now: c.now });
    assert.deepEqual(v.periods(), [], `${name}: the saved state holds only the checkpoint`);
    const ours = v.verify(c.expected.method, c.expected.params, c.proof);
    assert.deepEqual(ours, expectedResult(c.expected.method, c.expected.result, ours), name);
    assert.ok(v.periods().length > 0, `${name}: the committee was learned`);
    const later = await createVerifier({ network: 'mainnet', state: v.saveState(), now: c.now });
    assert.deepEqual(later.periods(), v.periods());
    assert.ok(later.saveState().length > saved.length, 'the keys were kept');
  }
});
