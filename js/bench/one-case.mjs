// One recorded case verified many times in one process: warm (the same verifier, which holds
// the keys and has seen the proof's signature) or cold (a verifier made from saved state, then
// its verify; `cold-swept`: the same after writing 64 MB of memory, as another program's work
// between two requests would leave the caches). Prints the median and p10 in ms. For profiles (`node --cpu-prof`) and A/B runs of
// two builds, one process each, alternated by the caller.
//
// usage: node js/bench/one-case.mjs PKG_DIR CASE [RUNS] [cold | cold-swept]
// e.g.   node js/bench/one-case.mjs target/js/sszgate-verifier eth_blockNumber_electra 3000
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [pkgDir, name, runsArg, mode] = process.argv.slice(2);
if (!pkgDir || !name) {
  console.error('usage: node js/bench/one-case.mjs PKG_DIR CASE [RUNS] [cold | cold-swept]');
  process.exit(2);
}
const RUNS = Number(runsArg ?? 3000);
const { createVerifier } = await import(pathToFileURL(path.join(pkgDir, 'index.js')).href);
const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, '../../crates/proof/testdata/colibri', name);
const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
const proof = new Uint8Array(fs.readFileSync(path.join(dir, 'proof.ssz')));
const slot = expected.decoded.checks.signature?.signed_slot;
// The clock of the proof's own slot, as js/bench/verify.mjs sets it.
const now = slot === undefined ? undefined : 1606824023 + (slot + 1) * 12;
const options = { network: 'mainnet', now, maxHeadAge: 1 << 30 };
const v = await createVerifier({ ...options, checkpoint: '0x' + '00'.repeat(32) });
for (const f of fs.readdirSync(dir).filter((f) => /^sync_committee_\d+\.pubkeys$/.test(f))) {
  v.addCommitteeKeys(Number(f.match(/\d+/)[0]), new Uint8Array(fs.readFileSync(path.join(dir, f))));
}
const { method, params } = expected;
v.verify(method, params, proof);
const state = v.saveState();
const sweep = mode === 'cold-swept' ? new Float64Array(8 << 20) : null;
const times = [];
for (let i = 0; i < RUNS; i++) {
  if (sweep) for (let j = 0; j < sweep.length; j += 8) sweep[j] += 1;
  const t = performance.now();
  if (mode === 'cold' || sweep) (await createVerifier({ ...options, state })).verify(method, params, proof);
  else v.verify(method, params, proof);
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(4);
console.log(`${name} ${mode ?? 'warm'}: median ${at(0.5)} ms, p10 ${at(0.1)} ms, ${RUNS} runs`);
