// js/bench/bls/run.sh: the three modules built by it, timed in one Node process.
// Size and time of one sync-committee aggregate verify per module (Node, same process, the
// modules interleaved round by round so that load on the machine falls on all of them).
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
const rounds = Number(process.argv[2] ?? 20);
const libs = [['blst 0.3.17 (C, clang wasm32)', 'target/opt/verify_blst.wasm'], ['arkworks ark-bls12-381 0.6', 'target/opt/verify_arkworks.wasm'],
  ['zkcrypto bls12_381 0.8', 'target/opt/verify_zkcrypto.wasm']];
const mods = [];
for (const [name, file] of libs) {
  const bytes = readFileSync(new URL(file, import.meta.url));
  const { instance } = await WebAssembly.instantiate(bytes, {});
  mods.push({ name, bytes, x: instance.exports, setup: [], verify: [] });
}
for (let i = 0; i < rounds; i++) {
  for (const m of mods) {
    if (i % 4 === 0) { const t = performance.now(); m.x.setup(); m.setup.push(performance.now() - t); }
    const t = performance.now();
    if (m.x.verify() !== 1) throw new Error(`${m.name}: did not verify`);
    m.verify.push(performance.now() - t);
  }
}
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1); };
for (const m of mods) {
  console.log(`| ${m.name} | ${m.bytes.length} | ${gzipSync(m.bytes, { level: 9 }).length} | ${q(m.setup, 0.5)} (${q(m.setup, 0.1)}–${q(m.setup, 0.9)}) | ${q(m.verify, 0.5)} (${q(m.verify, 0.1)}–${q(m.verify, 0.9)}) |`);
}
