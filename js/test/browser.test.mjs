// The built package in a browser: headless Chromium loads a page that imports the package's
// ESM entry over HTTP (the .wasm fetched by URL, as a web app would), verifies colibri's
// recorded mainnet proof from a checkpoint, saves and restores the state, and writes what it
// got into the page, which the test reads back from the DOM. Without Chromium the test skips
// loudly, except under CI=true where it fails.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
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

test('the package verifies a recorded proof in headless Chromium', async (t) => {
  if (!chromium) {
    assert.notEqual(process.env.CI, 'true', 'chromium is missing under CI: apt-get install chromium');
    console.error('!!! SKIPPED: the browser test: no chromium (apt-get install chromium)');
    t.skip('no chromium');
    return;
  }
  const expected = JSON.parse(await readFile(path.join(caseDir, 'expected.json'), 'utf8'));
  const now = 1606824023 + (expected.decoded.checks.signature.signed_slot + 1) * 12;
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    let file;
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(page(expected, now));
    }
    if (url.pathname.startsWith('/pkg/')) file = path.join(pkgDir, url.pathname.slice(5));
    if (url.pathname.startsWith('/case/')) file = path.join(caseDir, url.pathname.slice(6));
    if (!file || file.includes('..') || !existsSync(file)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    res.end(await readFile(file));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  try {
    const url = `http://127.0.0.1:${server.address().port}/`;
    const dom = await new Promise((ok, fail) => execFile(chromium, [
      '--headless', '--no-sandbox', '--disable-gpu', '--virtual-time-budget=30000', '--dump-dom', url,
    ], { timeout: 120000, maxBuffer: 16 << 20 }, (e, stdout, stderr) => (e ? fail(new Error(stderr)) : ok(stdout))));
    const m = dom.match(/RESULT:(.*):END/s);
    assert.ok(m, `the page did not finish: ${dom.slice(0, 500)}`);
    const out = JSON.parse(m[1].replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"'));
    assert.equal(out.error, undefined, out.error);
    assert.deepEqual(out.result, expected.result);
    assert.deepEqual(out.again, expected.result);
    assert.equal(out.changed, 'refused');
  } finally {
    await new Promise((ok) => server.close(ok));
  }
});
