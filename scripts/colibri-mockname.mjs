// colibri's mock-file naming of an upstream request (its tests' rule): the recorded cases in
// ../shared/data/colibri name each answer so. Shared by scripts/colibri-peer.mjs and
// js/bench/verify.mjs.
export function mockname(req) {
  let s = '';
  if (req.url) s = req.url;
  else if (req.payload) {
    const p = typeof req.payload === 'string' ? JSON.parse(req.payload) : req.payload;
    s = p.method + (p.params || []).map(a => '_' + (typeof a === 'string' ? a : JSON.stringify(a))).join('');
  }
  s = s.replace(/[\/\.,\s:=\?"&\[\]\{\}]/g, '_');
  if (s.length > 100) s = s.slice(0, 100);
  return s + '.' + req.encoding;
}
