// viem's getLogs over the package's EIP-1193 provider (viem from npm, its directory in
// SSZGATE_VIEM, else target/js/viem; without it this test skips loudly, except under CI=true).
// getBalance, getTransactionReceipt and call run end to end against `sszgate rpc
// --serve-proofs` in bin/sszgate/tests/embedded.rs; eth_getLogs cannot: the only recorded
// eth_getLogs case (eth_getLogs1) holds no light-client bootstrap, so the binary's light client
// cannot start on it. Here a local prover replays that case's recorded proof (colibri's
// `LogsProof`, the form that cannot show that no block of the range was left out): viem's
// getLogs is refused naming `completeness`, answers the recorded logs once the verifier is told
// to take that form (`acceptIncompleteLogs`), and a prover that changes a proven receipt's log
// or answers with another method's proof is caught.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const pkgDir = process.env.SSZGATE_VERIFIER_PKG ?? path.join(root, 'target/js/sszgate-verifier');
const viemDir = process.env.SSZGATE_VIEM ?? path.join(root, 'target/js/viem');
const viemEntry = path.join(viemDir, 'node_modules/viem/_esm/index.js');
const vectors = path.join(root, 'crates/proof/testdata/colibri');

const haveViem = existsSync(viemEntry);
if (!haveViem) {
  const why = `viem is not installed in ${viemDir} (npm install --prefix target/js/viem viem@2.57.20)`;
  if (process.env.CI === 'true') throw new Error(why);
  console.error(`!!! SKIPPED the viem getLogs test: ${why}`);
}

const { createVerifier, createProvider } = await import(pathToFileURL(path.join(pkgDir, 'index.js')).href);

async function load(name) {
  const dir = path.join(vectors, name);
  const expected = JSON.parse(await readFile(path.join(dir, 'expected.json'), 'utf8'));
  const proof = new Uint8Array(await readFile(path.join(dir, 'proof.ssz')));
  return { dir, expected, proof };
}

/** A saved state trusting the case's recorded committee keys (made from any root first). */
async function trustedState(c) {
  const v = await createVerifier({ network: 'mainnet', checkpoint: '0x' + '11'.repeat(32) });
  for (const entry of c.expected.trusted_sync_committee) {
    v.addCommitteeKeys(entry.period, new Uint8Array(await readFile(path.join(c.dir, entry.file))));
  }
  return v.saveState();
}

/** A prover at `POST /proof` answering every request with `bytes`. */
async function prover(bytes) {
  const seen = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.from(bytes));
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}/proof`;
  return { url, seen, close: () => new Promise((ok) => server.close(ok)) };
}

/** viem's getLogs of the recorded filter, through the provider over a prover sending `bytes`. */
async function getLogs(c, bytes, extra = {}) {
  const { createPublicClient, custom } = await import(pathToFileURL(viemEntry).href);
  const p = await prover(bytes);
  const [filter] = c.expected.params;
  const provider = createProvider({
    prover: p.url, network: 'mainnet', state: await trustedState(c), now: c.now, ...extra,
  });
  // No retries: a refused proof is refused again.
  const client = createPublicClient({ transport: custom(provider, { retryCount: 0 }) });
  try {
    const logs = await client.getLogs({
      address: filter.address, fromBlock: BigInt(filter.fromBlock), toBlock: BigInt(filter.toBlock),
    });
    return { logs, seen: p.seen };
  } catch (error) {
    return { error, seen: p.seen };
  } finally {
    await p.close();
  }
}

/** The check the provider named when it refused a proof (viem keeps the provider's error as
 *  `cause`, its message as `details`). */
function refusedCheck(error) {
  assert.ok(error, 'refused');
  assert.match(String(error.details), /^proof refused: check /);
  return error.cause?.data?.check;
}

test("viem's getLogs: colibri's incomplete form refused, taken on request, lies caught", { skip: !haveViem }, async () => {
  const c = await load('eth_getLogs1');
  c.now = 1606824023 + (c.expected.decoded.checks.blocks.at(-1).signature.signed_slot + 1) * 12;

  const byDefault = await getLogs(c, c.proof);
  assert.equal(refusedCheck(byDefault.error), 'completeness', 'refused by default');
  assert.equal(byDefault.seen.length, 1);
  assert.equal(byDefault.seen[0].method, 'eth_getLogs');
  const [asked] = byDefault.seen[0].params;
  const [filter] = c.expected.params;
  assert.equal(BigInt(asked.fromBlock), BigInt(filter.fromBlock), 'viem asked the recorded range');
  assert.equal(BigInt(asked.toBlock), BigInt(filter.toBlock));

  const taken = await getLogs(c, c.proof, { acceptIncompleteLogs: true });
  assert.ifError(taken.error);
  assert.equal(taken.logs.length, c.expected.result.length);
  taken.logs.forEach((log, i) => {
    const recorded = c.expected.result[i];
    for (const field of ['blockHash', 'transactionHash', 'address', 'data']) {
      assert.equal(log[field].toLowerCase(), recorded[field].toLowerCase(), `log ${i}: ${field}`);
    }
    assert.deepEqual(log.topics, recorded.topics, `log ${i}: topics`);
    assert.equal(log.blockNumber, BigInt(recorded.blockNumber), `log ${i}: blockNumber`);
  });

  // The emitting contract's address in the last receipt the proof carries, changed by one bit.
  const address = Buffer.from(filter.address[0].slice(2), 'hex');
  const changed = c.proof.slice();
  const at = Buffer.from(changed).lastIndexOf(address);
  assert.ok(at > 0, 'the address is in a proven receipt');
  changed[at] ^= 1;
  const lie = await getLogs(c, changed, { acceptIncompleteLogs: true });
  assert.equal(refusedCheck(lie.error), 'receipt_proof', 'a changed receipt is refused');

  const other = await load('eth_getTransactionReceipt1');
  const wrong = await getLogs(c, other.proof, { acceptIncompleteLogs: true });
  assert.equal(refusedCheck(wrong.error), 'proof_kind', "another method's proof is refused");
});
