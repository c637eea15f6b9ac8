// sszgate-verifier: the proof verifier of `sszgate rpc --prover`, compiled to WebAssembly.
// `createVerifier` checks proofs the caller fetched; `createProvider` is an EIP-1193 provider
// that asks a prover (colibri's remote-prover API, as `sszgate rpc --serve-proofs` serves it)
// and returns only verified answers. Nothing here trusts the prover: every answer comes out of
// the WASM verifier or is an error.

import init, { WasmOptions, WasmVerifier, methods } from './wasm/sszgate_verifier_wasm.js';

let loading;
let loaded = false;

/** Loads the WASM module once: from disk in Node, by URL in a browser (no network needed
 *  beyond the package's own files). */
function load() {
  if (!loading) {
    loading = (async () => {
      const url = new URL('./wasm/sszgate_verifier_wasm_bg.wasm', import.meta.url);
      if (typeof process !== 'undefined' && process.versions && process.versions.node) {
        const { readFile } = await import('node:fs/promises');
        await init({ module_or_path: await readFile(url) });
      } else {
        await init({ module_or_path: url });
      }
      loaded = true;
    })();
  }
  return loading;
}

/** The methods a proof can answer. */
export async function supportedMethods() {
  await load();
  return JSON.parse(methods());
}

// The options read by the WASM side, kept for the next verifier made with the same fields:
// writing and reading them anew (JSON, the chain's parameters and fork table) was a fifth of a
// verifier's making from saved state. Only for a network named by a string (an object could
// change in between). The clock (`now`) is not among them: it goes with each verify.
let lastOptions = null;
function readOptions(options) {
  const { network = 'mainnet', checkpoint, maxHeadAge, minParticipation, acceptIncompleteLogs } = options;
  const last = lastOptions;
  if (last && typeof network === 'string' && last.network === network && last.checkpoint === checkpoint
    && last.maxHeadAge === maxHeadAge && last.minParticipation === minParticipation
    && last.acceptIncompleteLogs === acceptIncompleteLogs) {
    return last.read;
  }
  const read = new WasmOptions(JSON.stringify({ network, checkpoint, maxHeadAge, minParticipation, acceptIncompleteLogs }));
  lastOptions = { network, checkpoint, maxHeadAge, minParticipation, acceptIncompleteLogs, read };
  return read;
}

function bytes(value, what) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new TypeError(`${what}: a Uint8Array expected`);
}

/**
 * A verifier for one chain. `options`: `network` ('mainnet', 'sepolia', 'hoodi' or a custom
 * chain object), and a trusted `checkpoint` (a finalized beacon block root) or a `state`
 * saved by `saveState()`; optionally `now` (Unix seconds: fixes the clock, for replays),
 * `maxHeadAge`, `minParticipation`.
 */
export function createVerifier(options = {}) {
  // Made synchronously when the module is loaded (an async function's own steps showed in a
  // verifier's making from saved state); errors are rejections either way.
  if (!loaded) return load().then(() => makeVerifier(options));
  try {
    return Promise.resolve(makeVerifier(options));
  } catch (e) {
    return Promise.reject(e);
  }
}

function makeVerifier(options) {
  // The fixed clock is checked here, where it is kept: the WASM side gets it with each verify.
  const fixedNow = options.now;
  if (fixedNow !== undefined && !(Number.isSafeInteger(fixedNow) && fixedNow >= 0)) {
    throw new Error('options: now: a non-negative integer expected');
  }
  const state = options.state === undefined ? undefined : bytes(options.state, 'state');
  const inner = new WasmVerifier(readOptions(options), state);
  return {
    /** The verified JSON-RPC result of `method(params)`, or throws an Error naming the check. */
    verify(method, params, proof) {
      const now = fixedNow ?? Math.floor(Date.now() / 1000);
      const text = inner.verify(method, JSON.stringify(params ?? []), bytes(proof, 'proof'), now);
      return JSON.parse(text);
    },
    /** The trust state (checkpoint and committee keys), for `createVerifier({ state })`. */
    saveState: () => inner.saveState(),
    /** What to tell a prover about this verifier (the `c4` field). */
    clientState: () => inner.clientState(),
    /** The sync-committee periods whose keys the verifier holds. */
    periods: () => Array.from(inner.periods()),
    /** Trusts 512 compressed BLS keys as the committee of `period`, without sync data: only
     *  for keys from a source as trusted as a checkpoint. */
    addCommitteeKeys: (period, keys) => inner.addCommitteeKeys(period, bytes(keys, 'keys')),
    /** Knows contract `code` by its hash, for eth_call proofs that leave it out (checked
     *  against the proven code hash when used). */
    addCode: (code) => inner.addCode(bytes(code, 'code')),
  };
}

const hex = (u8) => '0x' + Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');

/** An EIP-1193 error (`code` 4200: unsupported method; -32603: the proof was refused). */
function rpcError(code, message, data) {
  const error = new Error(message);
  error.code = code;
  if (data !== undefined) error.data = data;
  return error;
}

const CHAIN_IDS = { mainnet: 1, sepolia: 11155111, hoodi: 560048 };

/**
 * An EIP-1193 provider (`request({ method, params })`) over a prover at `options.prover` (the
 * URL of its `POST /proof`), with the verifier options of `createVerifier`. Unsupported
 * methods are refused (code 4200), never passed through. `options.onState(bytes)` is called
 * when the verifier learned new committee keys; `options.fetch` replaces the global fetch.
 */
export function createProvider(options = {}) {
  if (!options.prover) throw new TypeError('createProvider: `prover` (a URL) is required');
  const doFetch = options.fetch ?? globalThis.fetch;
  const verifier = createVerifier(options);
  const supported = supportedMethods();
  const network = options.network ?? 'mainnet';
  const chainId = typeof network === 'string' ? CHAIN_IDS[network] : network.chainId;
  async function request({ method, params = [] } = {}) {
    if (method === 'eth_chainId' && chainId !== undefined) return '0x' + chainId.toString(16);
    if (!(await supported).includes(method)) {
      throw rpcError(4200, `${method} is not verified by sszgate-verifier`);
    }
    const v = await verifier;
    const before = v.periods().join();
    const body = JSON.stringify({
      method, params, c4: hex(v.clientState()), include_code: method === 'eth_call',
    });
    const answer = await doFetch(options.prover, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body,
    });
    const proof = new Uint8Array(await answer.arrayBuffer());
    if (!answer.ok) {
      const text = new TextDecoder().decode(proof.subarray(0, 500));
      throw rpcError(-32603, `the prover answered ${answer.status}: ${text}`);
    }
    let result;
    try {
      result = v.verify(method, params, proof);
    } catch (e) {
      throw rpcError(-32603, `proof refused: ${e.message}`, { check: e.check });
    }
    if (options.onState && v.periods().join() !== before) options.onState(v.saveState());
    return result;
  }
  return { request };
}
