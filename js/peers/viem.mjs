// viem (npm, its directory in VIEM_DIR) over the package's EIP-1193 provider: the peer script
// of bin/sszgate/tests/embedded.rs. It reads one JSON job on stdin — the package's directory,
// the prover's URL, the verifier's clock, the committee keys to trust, the recorded calls — and
// asks each call through `createPublicClient({ transport: custom(createProvider(…)) })`, then
// once more through a relay that flips one byte of every proof. It writes one JSON line: what
// viem returned for each call (bigints as hex), and what the lying relay got.
//
// Not here: the expectations (the Rust test compares with the recording).

import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const job = JSON.parse(readFileSync(0, 'utf8'));
const { createPublicClient, custom } = await import(
  pathToFileURL(path.join(process.env.VIEM_DIR, 'node_modules/viem/_esm/index.js')).href
);
const { mainnet } = await import(
  pathToFileURL(path.join(process.env.VIEM_DIR, 'node_modules/viem/_esm/chains/index.js')).href
);
const { createVerifier, createProvider } = await import(pathToFileURL(path.join(job.pkg, 'index.js')).href);

/** A saved state trusting the recorded committee keys (the package is made from a root first). */
async function trustedState() {
  const v = await createVerifier({ network: 'mainnet', checkpoint: job.checkpoint, now: job.now });
  for (const { period, file } of job.keys) v.addCommitteeKeys(period, new Uint8Array(await readFile(file)));
  return v.saveState();
}

/** A fetch that flips the middle byte of every proof the prover sends. */
async function lyingFetch(url, init) {
  const answer = await fetch(url, init);
  const bytes = new Uint8Array(await answer.arrayBuffer());
  bytes[bytes.length >> 1] ^= 1;
  return new Response(bytes, { status: answer.status, headers: answer.headers });
}

const block = (tag) => (tag.startsWith('0x') ? { blockNumber: BigInt(tag) } : { blockTag: tag });

/** The viem action for a recorded `method(params)`. */
function ask(client, { method, params }) {
  switch (method) {
    case 'eth_getBalance':
      return client.getBalance({ address: params[0], ...block(params[1]) });
    case 'eth_getTransactionReceipt':
      return client.getTransactionReceipt({ hash: params[0] });
    case 'eth_call':
      return client.call({ to: params[0].to, data: params[0].data, ...block(params[1]) });
    default:
      throw new Error(`no viem action for ${method}`);
  }
}

const hex = (_, v) => (typeof v === 'bigint' ? '0x' + v.toString(16) : v);
const state = await trustedState();
// No retries: a refused proof is refused again, and the report should say so at once.
const client = (fetch) => createPublicClient({
  chain: mainnet,
  transport: custom(createProvider({ prover: job.prover, network: 'mainnet', state, now: job.now, fetch }), { retryCount: 0 }),
});
const honest = client(fetch);
const lying = client(lyingFetch);
const report = { answers: [], lies: [] };
for (const call of job.calls) {
  try {
    report.answers.push({ ok: JSON.parse(JSON.stringify(await ask(honest, call), hex)) });
  } catch (e) {
    report.answers.push({ error: String(e.details ?? e.message) });
  }
  try {
    report.lies.push({ ok: JSON.parse(JSON.stringify(await ask(lying, call), hex)) });
  } catch (e) {
    report.lies.push({ error: String(e.details ?? e.message), code: e.code ?? e.cause?.code });
  }
}
process.stdout.write(JSON.stringify(report) + '\n');
