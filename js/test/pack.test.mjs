// `npm pack` of the built package (SSZGATE_VERIFIER_PKG, else target/js/sszgate-verifier): the
// tarball holds the entry, the types, the README and the WASM with its glue, and nothing else;
// installed from the tarball into a fresh directory (offline), it is imported by its name and
// verifies a recorded proof.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const pkgDir = process.env.SSZGATE_VERIFIER_PKG ?? path.join(root, 'target/js/sszgate-verifier');
const CASE = path.join(root, 'crates/proof/testdata/colibri/syncdata_electra_blocknumber');

test('npm pack gives a tarball that installs and verifies by its name', async () => {
  const work = await mkdtemp(path.join(tmpdir(), 'sszgate-pack-'));
  try {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: pkgDir });
    const [packed] = JSON.parse(stdout);
    assert.equal(packed.name, 'sszgate-verifier');
    const files = packed.files.map((f) => f.path).sort();
    assert.deepEqual(files, ['README.md', 'index.d.ts', 'index.js', 'package.json',
      'wasm/sszgate_verifier_wasm.d.ts', 'wasm/sszgate_verifier_wasm.js',
      'wasm/sszgate_verifier_wasm_bg.wasm', 'wasm/sszgate_verifier_wasm_bg.wasm.d.ts']);
    const app = path.join(work, 'app');
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--prefix', app,
      path.join(work, packed.filename)]);
    const script = path.join(app, 'check.mjs');
    await writeFile(script, `
import { readFile } from 'node:fs/promises';
import { createVerifier } from 'sszgate-verifier';
const e = JSON.parse(await readFile(${JSON.stringify(path.join(CASE, 'expected.json'))}, 'utf8'));
const proof = new Uint8Array(await readFile(${JSON.stringify(path.join(CASE, 'proof.ssz'))}));
const now = 1606824023 + (e.decoded.checks.signature.signed_slot + 1) * 12;
const v = await createVerifier({ network: 'mainnet', checkpoint: e.trusted_checkpoint, now });
process.stdout.write(JSON.stringify({ got: v.verify(e.method, e.params, proof), want: e.result }));
`);
    const out = JSON.parse((await run('node', [script], { cwd: app })).stdout);
    assert.deepEqual(out.got, out.want);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});
