// What the first verifier made from saved state costs in a fresh process: the module loaded
// and one verifier made first (so that what is timed is the state, not the module's
// instantiation), then one verifier from a saved one-period state, timed once. Run it in many
// fresh processes and compare medians; every run is the first of its process, so there is no
// loop to warm up.
//
// usage: node js/bench/first-load.mjs PKG_DIR STATE_FILE save   (writes the state once)
//        node js/bench/first-load.mjs PKG_DIR STATE_FILE        (prints one time, ms)
// e.g.   node js/bench/first-load.mjs target/js/sszgate-verifier /tmp/state.bin save
//        for i in $(seq 12); do node js/bench/first-load.mjs target/js/sszgate-verifier /tmp/state.bin; done
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [pkgDir, stateFile, mode] = process.argv.slice(2);
if (!pkgDir || !stateFile) {
  console.error('usage: node js/bench/first-load.mjs PKG_DIR STATE_FILE [save]');
  process.exit(2);
}
const { createVerifier } = await import(pathToFileURL(path.join(pkgDir, 'index.js')).href);
const here = path.dirname(fileURLToPath(import.meta.url));
// The committee of the recorded eth_getBalance1 case (one period).
const dir = path.resolve(here, '../../crates/proof/testdata/colibri/eth_getBalance1');
const checkpoint = '0x' + '00'.repeat(32);
if (mode === 'save') {
  const v = await createVerifier({ network: 'mainnet', checkpoint });
  for (const f of fs.readdirSync(dir).filter((f) => /^sync_committee_\d+\.pubkeys$/.test(f))) {
    v.addCommitteeKeys(Number(f.match(/\d+/)[0]), new Uint8Array(fs.readFileSync(path.join(dir, f))));
  }
  fs.writeFileSync(stateFile, v.saveState());
} else {
  const state = new Uint8Array(fs.readFileSync(stateFile));
  await createVerifier({ network: 'mainnet', checkpoint });
  const t = performance.now();
  await createVerifier({ network: 'mainnet', state });
  console.log(`${(performance.now() - t).toFixed(3)} ms: the first verifier from saved state in this process`);
}
