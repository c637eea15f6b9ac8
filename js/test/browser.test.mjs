// The built package in a browser: headless Chromium loads a page that imports the package's
// ESM entry over HTTP (the .wasm fetched by URL, as a web app would), verifies colibri's
// recorded mainnet proof from a checkpoint, saves and restores the state, and writes what it
// got into the page, which the test reads back from the DOM. Without Chromium the test skips
// loudly, except under CI=true where it fails.
// With SSZGATE_PROVER_URL (set by bin/sszgate/tests/embedded.rs, which runs `sszgate rpc
// --serve-proofs` over a recorded case named by SSZGATE_PROVER_CASE) a second page asks that
// prover for the case's proof through `createProvider` (the page's server relays POST /proof, so
// the page stays same-origin; /lying-proof flips a byte of the proof), writes what it verified,
// and a screenshot of it is saved (SSZGATE_SCREENSHOT, else target/browser-prover.png).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir, rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const pkgDir = process.env.SSZGATE_VERIFIER_PKG ?? path.join(root, 'target/js/sszgate-verifier');
const caseDir = path.join(root, 'crates/proof/testdata/colibri/syncdata_electra_blocknumber');
const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html', '.json': 'application/json' };

function page(expected, now) {
  return `<!doctype html><body>running<script type="module">
import { createVerifier } from '/pkg/index.js';
const out = {};
try {
  const proof = new Uint8Array(await (await fetch('/case/proof.ssz')).arrayBuffer());
  const v = await createVerifier({ network: 'mainnet', checkpoint: '${expected.trusted_checkpoint}', now: ${now} });
  out.result = v.verify('${expected.method}', ${JSON.stringify(expected.params)}, proof);
  const again = await createVerifier({ network: 'mainnet', state: v.saveState(), now: ${now} });
  out.again = again.verify('${expected.method}', ${JSON.stringify(expected.params)}, proof);
  proof[proof.length - 1] ^= 1;
  try { again.verify('${expected.method}', ${JSON.stringify(expected.params)}, proof); out.changed = 'accepted'; }
  catch (e) { out.changed = 'refused'; }
} catch (e) { out.error = String(e && e.stack || e); }
document.body.textContent = 'RESULT:' + JSON.stringify(out) + ':END';
</script></body>`;
}

/** Skips loudly without Chromium (a failure under CI=true); true when it is there. */
function haveChromium(t) {
  if (chromium) return true;
  assert.notEqual(process.env.CI, 'true', 'chromium is missing under CI: apt-get install chromium');
  console.error('!!! SKIPPED: the browser test: no chromium (apt-get install chromium)');
  t.skip('no chromium');
  return false;
}

/** Relays a POST body to `target`, flipping the middle byte of the answer when `lie`. */
async function relay(req, res, target, lie) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const answer = await fetch(target, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks),
  });
  const bytes = new Uint8Array(await answer.arrayBuffer());
  if (lie && bytes.length) bytes[bytes.length >> 1] ^= 1;
  res.writeHead(answer.status, { 'content-type': 'application/octet-stream' });
  res.end(bytes);
}

/** A local server of `html` at /, the package at /pkg/, `dir`'s files at /case/, and the
 *  prover (if given) relayed at /proof and, lying, at /lying-proof. */
async function serve(html, dir, prover) {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    let file;
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(html);
    }
    if (prover && req.method === 'POST' && ['/proof', '/lying-proof'].includes(url.pathname)) {
      return relay(req, res, prover, url.pathname === '/lying-proof');
    }
    if (url.pathname.startsWith('/pkg/')) file = path.join(pkgDir, url.pathname.slice(5));
    if (url.pathname.startsWith('/case/')) file = path.join(dir, url.pathname.slice(6));
    if (!file || file.includes('..') || !existsSync(file)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    res.end(await readFile(file));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((ok) => server.close(ok)) };
}

/** Headless Chromium on `url` with `args`; its stdout. */
function chromiumOn(url, args) {
  return new Promise((ok, fail) => execFile(chromium, [
    '--headless', '--no-sandbox', '--disable-gpu', '--virtual-time-budget=30000', ...args, url,
  ], { timeout: 120000, maxBuffer: 16 << 20 }, (e, stdout, stderr) => (e ? fail(new Error(stderr)) : ok(stdout))));
}

/** What the page at `url` wrote between RESULT: and :END. */
async function pageResult(url) {
  const dom = await chromiumOn(url, ['--dump-dom']);
  const m = dom.match(/RESULT:(.*):END/s);
  assert.ok(m, `the page did not finish: ${dom.slice(0, 500)}`);
  const out = JSON.parse(m[1].replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"'));
  assert.equal(out.error, undefined, out.error);
  return out;
}

test('the package verifies a recorded proof in headless Chromium', async (t) => {
  if (!haveChromium(t)) return;
  const expected = JSON.parse(await readFile(path.join(caseDir, 'expected.json'), 'utf8'));
  const now = 1606824023 + (expected.decoded.checks.signature.signed_slot + 1) * 12;
  const server = await serve(page(expected, now), caseDir);
  try {
    const out = await pageResult(server.url);
    assert.deepEqual(out.result, expected.result);
    assert.deepEqual(out.again, expected.result);
    assert.equal(out.changed, 'refused');
  } finally {
    await server.close();
  }
});

/** The page asking the prover through `createProvider`, trusting the case's recorded keys. */
function proverPage(expected, now, periods) {
  const args = `{ method: '${expected.method}', params: ${JSON.stringify(expected.params)} }`;
  return `<!doctype html><body>running<script type="module">
import { createVerifier, createProvider } from '/pkg/index.js';
const out = {};
try {
  const v = await createVerifier({ network: 'mainnet', checkpoint: '0x${'11'.repeat(32)}', now: ${now} });
  for (const p of ${JSON.stringify(periods)}) {
    v.addCommitteeKeys(p, new Uint8Array(await (await fetch('/case/sync_committee_' + p + '.pubkeys')).arrayBuffer()));
  }
  const options = { network: 'mainnet', state: v.saveState(), now: ${now} };
  const honest = createProvider({ ...options, prover: location.origin + '/proof' });
  out.result = await honest.request(${args});
  const lying = createProvider({ ...options, prover: location.origin + '/lying-proof' });
  try { await lying.request(${args}); out.lie = 'accepted'; }
  catch (e) { out.lie = e.code + ' ' + e.message; }
} catch (e) { out.error = String(e && e.stack || e); }
document.body.style.font = '14px monospace';
document.body.textContent = 'sszgate-verifier in Chromium, ${expected.method} from sszgate rpc --serve-proofs: RESULT:' + JSON.stringify(out) + ':END';
</script></body>`;
}

// Needs a running prover: bin/sszgate/tests/embedded.rs starts `sszgate rpc --serve-proofs` and
// runs this file with SSZGATE_PROVER_URL set; a plain `node --test js/test/` does not define it.
const proverTest = process.env.SSZGATE_PROVER_URL ? test : () => {};
proverTest('in headless Chromium, createProvider verifies what sszgate rpc --serve-proofs proves', async (t) => {
  const prover = process.env.SSZGATE_PROVER_URL;
  if (!haveChromium(t)) return;
  const dir = path.join(root, 'crates/proof/testdata/colibri', process.env.SSZGATE_PROVER_CASE);
  const expected = JSON.parse(await readFile(path.join(dir, 'expected.json'), 'utf8'));
  const now = 1606824023 + (expected.decoded.checks.signature.signed_slot + 1) * 12;
  const periods = (await readdir(dir)).map((f) => f.match(/^sync_committee_(\d+)\.pubkeys$/)?.[1])
    .filter(Boolean).map(Number);
  const server = await serve(proverPage(expected, now, periods), dir, prover);
  try {
    const out = await pageResult(server.url);
    assert.equal(BigInt(out.result), BigInt(expected.result), 'the recorded answer');
    assert.match(out.lie, /^-32603 proof refused/);
    const shot = process.env.SSZGATE_SCREENSHOT ?? path.join(root, 'target/browser-prover.png');
    await rm(shot, { force: true });
    await chromiumOn(server.url, [`--screenshot=${shot}`, '--window-size=1200,400']);
    assert.ok((await stat(shot)).size > 1000, `a screenshot at ${shot}`);
  } finally {
    await server.close();
  }
});
