// The built package (scripts/build-js.sh; its directory in SSZGATE_VERIFIER_PKG, else
// target/js/sszgate-verifier) on colibri's recorded mainnet proofs, in Node: a verifier from a
// checkpoint learns the committee from a proof's sync data and answers as recorded; its saved
// state answers again; a changed proof is refused naming the check; the EIP-1193 provider asks a
// prover over HTTP, answers only verified results, refuses unsupported methods and lying provers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const pkgDir = process.env.SSZGATE_VERIFIER_PKG ?? path.join(root, 'target/js/sszgate-verifier');
const { createVerifier, createProvider, supportedMethods } = await import(
  pathToFileURL(path.join(pkgDir, 'index.js')).href
);

const vectors = path.join(root, 'crates/proof/testdata/colibri');
const CASE = 'syncdata_electra_blocknumber';

async function vector(name) {
  const expected = JSON.parse(await readFile(path.join(vectors, name, 'expected.json'), 'utf8'));
  const proof = new Uint8Array(await readFile(path.join(vectors, name, 'proof.ssz')));
  const slot = expected.decoded.checks.signature.signed_slot;
  const now = 1606824023 + (slot + 1) * 12;
  return { expected, proof, now };
}

test('a checkpoint and a proof with sync data give the recorded answer; the state round-trips', async () => {
  const { expected, proof, now } = await vector(CASE);
  const v = await createVerifier({ network: 'mainnet', checkpoint: expected.trusted_checkpoint, now });
  assert.deepEqual(v.periods(), []);
  assert.equal(v.clientState()[0], 2);
  const answer = v.verify(expected.method, expected.params, proof);
  assert.deepEqual(answer, expected.result);
  assert.ok(v.periods().length > 0);
  const state = v.saveState();
  assert.ok(state instanceof Uint8Array && state.length > 0);
  const again = await createVerifier({ network: 'mainnet', state, now });
  assert.deepEqual(again.periods(), v.periods());
  assert.deepEqual(again.verify(expected.method, expected.params, proof), expected.result);
});

test('a changed proof, a wrong checkpoint and missing options are refused by name', async () => {
  const { expected, proof, now } = await vector(CASE);
  const wrong = '0x' + '11'.repeat(32);
  const v = await createVerifier({ network: 'mainnet', checkpoint: wrong, now });
  assert.throws(() => v.verify(expected.method, expected.params, proof), (e) => e.check === 'sync_data');
  const changed = proof.slice();
  changed[changed.length - 1] ^= 1;
  const w = await createVerifier({ network: 'mainnet', checkpoint: expected.trusted_checkpoint, now });
  assert.throws(() => w.verify(expected.method, expected.params, changed), Error);
  await assert.rejects(createVerifier({ network: 'mainnet' }), /checkpoint/);
  await assert.rejects(createVerifier({ network: 'goerli', checkpoint: wrong }), /goerli/);
  assert.ok((await supportedMethods()).includes('eth_getBalance'));
});

test('a saved state read from its JS array: damage, a cut and extra bytes are refused by name', async () => {
  const { expected, proof, now } = await vector(CASE);
  const v = await createVerifier({ network: 'mainnet', checkpoint: expected.trusted_checkpoint, now });
  v.verify(expected.method, expected.params, proof);
  // The committee trusted anew for a period nothing else names: an entry this process has not
  // read (one it has read is known by its digest and keeps the keys it gave).
  const entry = 74;
  const keys = v.saveState().slice(entry + 8, entry + 8 + 512 * 48);
  const fresh = await createVerifier({ network: 'mainnet', checkpoint: expected.trusted_checkpoint, now });
  fresh.addCommitteeKeys(987654, keys);
  const state = fresh.saveState();
  const changed = (at) => { const s = state.slice(); s[at] ^= 1; return s; };
  await assert.rejects(createVerifier({ network: 'mainnet', state: changed(entry + 8 + 513 * 48 + 1000) }),
    /entry 0: its SHA-256 does not match/);
  await assert.rejects(createVerifier({ network: 'mainnet', state: changed(20) }), /head: its SHA-256 does not match/);
  await assert.rejects(createVerifier({ network: 'mainnet', state: state.slice(0, -1) }), /truncated/);
  const longer = new Uint8Array(state.length + 1);
  longer.set(state);
  await assert.rejects(createVerifier({ network: 'mainnet', state: longer }), /1 bytes after the last entry/);
  const good = await createVerifier({ network: 'mainnet', state: state.buffer });
  assert.deepEqual(good.periods(), [987654]);
});

test('options kept between verifiers follow each verifier\'s own fields, and the clock is its own', async () => {
  const { expected, proof, now } = await vector(CASE);
  const v = await createVerifier({ network: 'mainnet', checkpoint: expected.trusted_checkpoint, now });
  v.verify(expected.method, expected.params, proof);
  const state = v.saveState();
  // An hour after the proof's head: stale under a head age of one slot, fresh under a long one.
  const later = now + 3600;
  const verifyWith = async (maxHeadAge, clock) => (await createVerifier({ network: 'mainnet', state, now: clock, maxHeadAge }))
    .verify(expected.method, expected.params, proof);
  const stale = (e) => e.check === 'tag' && /301 slots behind the clock's slot .*at most 1 allowed/.test(e.message);
  await assert.rejects(verifyWith(1, later), stale);
  assert.equal(await verifyWith(1 << 30, later), expected.result);
  await assert.rejects(verifyWith(1, later), stale);
  // The same options with the proof's own clock: fresh.
  assert.equal(await verifyWith(1, now), expected.result);
  await assert.rejects(createVerifier({ network: 'mainnet', state, now: -1 }), /now: a non-negative integer/);
  await assert.rejects(createVerifier({ network: 'mainnet', state, now: 1.5 }), /now: a non-negative integer/);
});

/** A prover at `POST /proof` answering each request with `answer(request)`. */
async function prover(answer) {
  const seen = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const request = JSON.parse(body);
      seen.push(request);
      const { status, bytes } = answer(request);
      res.writeHead(status, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.from(bytes));
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}/proof`;
  return { url, seen, close: () => new Promise((ok) => server.close(ok)) };
}

test('the EIP-1193 provider answers verified results only', async () => {
  const { expected, proof, now } = await vector(CASE);
  const p = await prover(() => ({ status: 200, bytes: proof }));
  try {
    let saved;
    const provider = createProvider({
      prover: p.url, network: 'mainnet', checkpoint: expected.trusted_checkpoint, now,
      onState: (s) => (saved = s),
    });
    assert.equal(await provider.request({ method: 'eth_chainId' }), '0x1');
    const answer = await provider.request({ method: expected.method, params: expected.params });
    assert.deepEqual(answer, expected.result);
    assert.equal(p.seen[0].method, expected.method);
    assert.equal(p.seen[0].c4, expected.trusted_checkpoint.replace('0x', '0x02'));
    assert.ok(saved instanceof Uint8Array, 'the learned keys were handed to onState');
    await assert.rejects(
      provider.request({ method: 'eth_sendRawTransaction', params: ['0x00'] }),
      (e) => e.code === 4200,
    );
    assert.equal(p.seen.length, 1, 'an unsupported method never reaches the prover');
  } finally {
    await p.close();
  }
});

test('a lying or failing prover gives an error, never an answer', async () => {
  const { expected, proof, now } = await vector(CASE);
  const changed = proof.slice();
  changed[changed.length - 1] ^= 1;
  for (const [status, bytes] of [[200, changed], [500, new TextEncoder().encode('{"error":"down"}')]]) {
    const p = await prover(() => ({ status, bytes }));
    try {
      const provider = createProvider({
        prover: p.url, network: 'mainnet', checkpoint: expected.trusted_checkpoint, now,
      });
      await assert.rejects(provider.request({ method: expected.method, params: expected.params }),
        (e) => e.code === -32603);
    } finally {
      await p.close();
    }
  }
});
