// colibri.stateless (its npm WASM package) as a peer that `sszgate bench rpc`, the agreement
// test and the proof tests (crates/proof/tests/prover.rs) drive over stdin/stdout, one JSON object a line each way, so its timings are taken in
// the same run as sszgate's and interleaved with them.
//
// Every upstream request colibri makes is answered only from the recorded case's files (the
// same file naming as colibri's own tests); with no server configured, nothing can reach the
// network. Storage (trusted state, sync-committee keys) is read from the case directory and
// written to memory only.
//
// Requests:
//   {"op":"prove","case":DIR,"method":M,"params":P,"save":FILE?} -> {"ok":true,"ms":T,"size":N}
//   {"op":"verify","case":DIR,"method":M,"params":P,"fresh":B,
//    "proof":FILE?,"checkpoint":ROOT?}                             -> {"ok":true,"ms":T,"result":R}
//   {"op":"rpc","case":DIR,"method":M,"params":P,"prover":URL,
//    "checkpoint":ROOT?}                                           -> {"ok":true,"ms":T,"result":R}
// `rpc` is colibri's client asking a remote prover at URL for the proof and verifying it
// (the prover is the only request that leaves the process).
//   {"op":"serve","case":DIR}                                      -> {"ok":true,"port":P}
// `serve` makes colibri's prover a remote prover over HTTP on 127.0.0.1:P (colibri's API:
// POST a JSON {method, params, c4?} body, the proof comes back as application/octet-stream;
// a failure is 500 {"error"}), answering from the case's recorded files, until stdin closes.
// `verify` checks the proof last made by `prove` for that case (or FILE); `fresh` starts from a
// new client and empty memory, otherwise the previous client is reused (warm). The WASM module
// keeps state of its own across clients, so a cold verification is one in a new process.
// Errors answer {"ok":false,"error":"..."}.
//
// usage: COLIBRI_PKG=<dir of @corpus-core/colibri-stateless> node scripts/colibri-peer.mjs
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import http from 'node:http';
import { mockname } from './colibri-mockname.mjs';

const PKG = process.env.COLIBRI_PKG;
if (!PKG) {
  console.error('COLIBRI_PKG is not set: the directory of @corpus-core/colibri-stateless');
  process.exit(2);
}
const { default: C4Client } = await import(path.join(PKG, 'index.js'));


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

const cache = {
  cacheable: () => true,
  get: (req) => {
    const p = path.join(caseDir, mockname(req));
    return fs.existsSync(p) ? fs.readFileSync(p) : null;
  },
  set: () => {},
};

function client(checkpoint, prover) {
  const conf = { chainId: 1, rpcs: [], beacon_apis: [], prover: prover ? [prover] : [], checkpointz: [], cache, warningHandler: async () => {} };
  if (checkpoint) conf.trusted_checkpoint = checkpoint;
  return new C4Client(conf);
}

const proofs = new Map();
let warm = null;

async function handle(req) {
  if (caseDir !== req.case) { caseDir = req.case; memory = new Map(); warm = null; }
  if (req.op === 'prove') {
    const c = client(req.checkpoint);
    const t = performance.now();
    const proof = await c.createProof(req.method, req.params);
    const ms = performance.now() - t;
    proofs.set(req.case, proof);
    if (req.save) fs.writeFileSync(req.save, proof);
    return { ok: true, ms, size: proof.length };
  }
  if (req.op === 'verify') {
    const proof = req.proof ? new Uint8Array(fs.readFileSync(req.proof)) : proofs.get(req.case);
    if (!proof) return { ok: false, error: 'no proof: prove the case first or name a file' };
    if (req.fresh || !warm) { memory = new Map(); warm = client(req.checkpoint); }
    const t = performance.now();
    const result = await warm.verifyProof(req.method, req.params, proof);
    return { ok: true, ms: performance.now() - t, result };
  }
  if (req.op === 'serve') {
    const server = http.createServer((request, response) => {
      const chunks = [];
      let size = 0;
      request.on('data', (c) => {
        size += c.length;
        if (size > (1 << 20)) { request.destroy(); return; }
        chunks.push(c);
      });
      request.on('end', async () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString());
          const proof = await client().createProof(body.method, body.params);
          response.writeHead(200, { 'content-type': 'application/octet-stream' });
          response.end(Buffer.from(proof));
        } catch (e) {
          response.writeHead(500, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ error: String((e && e.message) || e) }));
        }
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { ok: true, port: server.address().port };
  }
  if (req.op === 'rpc') {
    memory = new Map();
    const c = client(req.checkpoint, req.prover);
    const t = performance.now();
    const result = await c.rpc(req.method, req.params);
    return { ok: true, ms: performance.now() - t, result };
  }
  return { ok: false, error: `unknown op ${req.op}` };
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = await handle(JSON.parse(line));
  } catch (e) {
    answer = { ok: false, error: String((e && e.message) || e) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
// stdin closed: every request was answered; end (a `serve` server would keep node alive).
process.exit(0);
