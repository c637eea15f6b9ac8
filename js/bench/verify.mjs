// Benchmark: sszgate-verifier (this package's WASM) against colibri.stateless's npm WASM
// verifier, in the same Node process and the same rounds, interleaved case by case, on
// colibri's recorded mainnet proofs (crates/proof/testdata/colibri). Each tool verifies each
// case warm (a verifier that already holds the committee keys) and cold (a new verifier: for
// sszgate one made from saved state bytes; for colibri a new client with empty memory, the
// keys read back from the case's files; colibri's module keeps state across clients, so its
// "cold" is a new client, not a new module). Both must accept every proof; how their answers
// agree (and where sszgate differs on purpose) is `sszgate bench rpc`'s and the tests'. Prints a Markdown report: the machine, the package
// sizes, per case the median and p10–p90 of each tool and their ratio.
//
// colibri reads its trusted state and committee keys (`states_1`, `sync_1_<period>`) and
// any upstream answer it asks for from the case's recorded data (../shared/data/colibri);
// sszgate gets the same committee keys from the vector (`sync_committee_<period>.pubkeys`).
//
// usage: node js/bench/verify.mjs PKG_DIR COLIBRI_PKG_DIR [ROUNDS]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mockname } from '../../scripts/colibri-mockname.mjs';

const [pkgDir, colibriDir, roundsArg] = process.argv.slice(2);
if (!pkgDir || !colibriDir) {
  console.error('usage: node js/bench/verify.mjs PKG_DIR COLIBRI_PKG_DIR [ROUNDS]');
  process.exit(2);
}
const ROUNDS = Number(roundsArg ?? 20);
const here = path.dirname(fileURLToPath(import.meta.url));
const vectors = path.resolve(here, '../../crates/proof/testdata/colibri');
const recorded = path.resolve(here, '../../../shared/data/colibri');
const { createVerifier } = await import(pathToFileURL(path.join(pkgDir, 'index.js')).href);
const { default: C4Client } = await import(pathToFileURL(path.join(colibriDir, 'index.js')).href);

// Cases both verify from committee keys alone (eth_getLogs1 is colibri's incomplete form,
// which sszgate refuses by default; eth_call1 needs a code cache).
const CASES = [
  'eth_blockNumber_electra', 'eth_getBalance1', 'eth_getBlockByHash1', 'eth_getBlockByNumber_electra',
  'eth_getProof1', 'eth_getStorageAt1', 'eth_getTransactionByHash1', 'eth_getTransactionByHash_electra',
  'eth_getTransactionCount1', 'eth_getTransactionReceipt1', 'eth_call1_include_code',
];

let caseDir = null;
let memory = new Map();
await C4Client.register_storage({
  get: (k) => {
    if (memory.has(k)) return memory.get(k);
    const p = caseDir && path.join(caseDir, k);
    return p && fs.existsSync(p) ? fs.readFileSync(p) : null;
  },
  set: (k, v) => { memory.set(k, new Uint8Array(v)); },
  del: (k) => { memory.delete(k); },
});
// Whatever colibri's verifier asks upstream is answered from the recorded case, nothing else.
const cache = {
  cacheable: () => true,
  get: (req) => {
    const p = path.join(caseDir, mockname(req));
    return fs.existsSync(p) ? fs.readFileSync(p) : null;
  },
  set: () => {},
};
const colibriClient = () => new C4Client({ chainId: 1, rpcs: [], beacon_apis: [], prover: [], checkpointz: [], cache, warningHandler: async () => {} });

function load(name) {
  const dir = path.join(vectors, name);
  const data = path.join(recorded, name.replace('_include_code', ''));
  const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
  const proof = new Uint8Array(fs.readFileSync(path.join(dir, 'proof.ssz')));
  const keys = fs.readdirSync(dir).filter((f) => /^sync_committee_\d+\.pubkeys$/.test(f))
    .map((f) => [Number(f.match(/\d+/)[0]), new Uint8Array(fs.readFileSync(path.join(dir, f)))]);
  const slot = expected.decoded.checks.signature?.signed_slot;
  const now = slot === undefined ? undefined : 1606824023 + (slot + 1) * 12;
  return { name, dir, data, expected, proof, keys, now };
}

async function sszgateVerifier(c, state) {
  const options = { network: 'mainnet', now: c.now, maxHeadAge: 1 << 30 };
  if (state) return createVerifier({ ...options, state });
  const v = await createVerifier({ ...options, checkpoint: '0x' + '00'.repeat(32) });
  for (const [period, keys] of c.keys) v.addCommitteeKeys(period, keys);
  return v;
}

const time = async (f) => { const t = performance.now(); const r = await f(); return [performance.now() - t, r]; };

const cases = CASES.map(load);
const samples = new Map(cases.map((c) => [c.name, { sw: [], cw: [], sc: [], cc: [] }]));
const warm = new Map();
for (const c of cases) {
  caseDir = c.data; memory = new Map();
  const v = await sszgateVerifier(c);
  // colibri keeps what it learns in its storage: each case's warm client gets a memory of its own.
  warm.set(c.name, { sszgate: v, state: v.saveState(), colibri: colibriClient(), memory });
}
for (let round = 0; round < ROUNDS; round++) {
  for (const c of cases) {
    const w = warm.get(c.name);
    const s = samples.get(c.name);
    const { method, params, result } = c.expected;
    caseDir = c.data;
    memory = w.memory;
    const [sw, a] = await time(() => w.sszgate.verify(method, params, c.proof));
    const [cw, b] = await time(() => w.colibri.verifyProof(method, params, c.proof));
    const [sc, d] = await time(async () => (await sszgateVerifier(c, w.state)).verify(method, params, c.proof));
    memory = new Map();
    const [cc, e] = await time(() => colibriClient().verifyProof(method, params, c.proof));
    if (round === 0 && [a, b, d, e].some((x) => x === undefined || x === null)) {
      console.error(`!!! ${c.name}: an empty answer`);
    }
    s.sw.push(sw); s.cw.push(cw); s.sc.push(sc); s.cc.push(cc);
  }
}

const q = (xs, p) => { const s = [...xs].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const fmt = (xs) => `${q(xs, 0.5).toFixed(2)} (${q(xs, 0.1).toFixed(2)}–${q(xs, 0.9).toFixed(2)})`;
const size = (dir, re) => fs.readdirSync(dir, { recursive: true }).filter((f) => re.test(f))
  .reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);

const ours = { wasm: size(path.join(pkgDir, 'wasm'), /\.wasm$/), js: size(pkgDir, /\.js$/) };
const theirs = { wasm: size(colibriDir, /\.wasm$/), js: size(colibriDir, /\.(js|mjs)$/) };
console.log(`# sszgate-verifier (WASM) vs colibri.stateless ${JSON.parse(fs.readFileSync(path.join(colibriDir, 'package.json'))).version} (WASM), same process\n`);
console.log(`Machine: ${os.cpus().length} × ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${ROUNDS} rounds, cases interleaved.\n`);
console.log('| package | .wasm bytes | JS bytes |\n|---|---:|---:|');
console.log(`| sszgate-verifier | ${ours.wasm} | ${ours.js} |\n| colibri-stateless | ${theirs.wasm} | ${theirs.js} |\n`);
console.log('Verification in ms, median (p10–p90):\n');
console.log('| case | sszgate warm | colibri warm | ratio | sszgate cold | colibri cold | ratio |\n|---|---:|---:|---:|---:|---:|---:|');
for (const c of cases) {
  const s = samples.get(c.name);
  const r = (a, b) => (q(b, 0.5) / q(a, 0.5)).toFixed(1) + '×';
  console.log(`| ${c.name} | ${fmt(s.sw)} | ${fmt(s.cw)} | ${r(s.sw, s.cw)} | ${fmt(s.sc)} | ${fmt(s.cc)} | ${r(s.sc, s.cc)} |`);
}
console.log('\nratio: colibri\'s median over sszgate\'s (above 1: sszgate faster).');
