//! The benchmarks of sszgate and their measurement harness.
//!
//! - [`harness`]: an interleaving measurement harness (medians and spread, side by side).
//! - [`proxy`]: the proxy benchmark (a fake EL serving real-data answers, called directly and
//!   through the relay, interleaved).
//! - [`relay_floor`]: plain TCP relays (copying, splicing) the proxy benchmark measures as
//!   the floor of any relay on the machine.
//! - [`snooper_peer`]: rpc-snooper as a peer in the proxy benchmark (`--rpc-snooper`):
//!   `sszgate snooper` and rpc-snooper side by side, logging and publishing to a real xatu
//!   server: latency, CPU, memory, and drops under sustained 72-blob load.
//! - [`codec`]: the codec study (`sszgate bench codec`): every message, six operations.
//! - [`soak`]: the soak run (`sszgate bench soak`): mainnet-shaped traffic through the relay
//!   and the bridge for a set time; memory over time, latency, errors, records lost.
//! - [`compress`]: the compression study (`sszgate bench compress`): five codecs, real data.
//! - [`e2e`]: the end-to-end bench (`sszgate bench e2e`): a real Fulu CL's own Engine API
//!   timings with its links direct, through sszgate and through rpc-snooper, in alternating
//!   windows of one chain.
//! - [`report`]: their Markdown tables, CSV and SVG charts.
//! - [`attack`]: the adversarial campaign (`sszgate bench attack`): bombs, floods, slowloris,
//!   malformed HTTP/1.1, h2c and WebSocket abuse against proxy processes, judged per row;
//!   [`attack::rpc`] the same against `sszgate rpc` (`--target rpc`): lying Beacon APIs and
//!   hostile clients.
//! - [`rpc`]: the verified-RPC benchmark (`sszgate bench rpc`): sszgate's verifier (local
//!   mode) and its prover and proof verifier (remote mode) next to colibri.stateless's on the
//!   recorded mainnet cases, cold and warm, and the bytes each moves.
//! - [`ssz_study`]: the SSZ Engine API study on a real chain (`sszgate bench ssz-chain`): a
//!   Fulu Lodestar + geth chain through two bridges back to back, bytes and times per method
//!   and blob count.
//!
//! The codec benchmark is `benches/codec.rs`. Messages come from `sszgate-fixtures`.

pub mod attack;
pub mod codec;
pub mod compress;
pub mod e2e;
pub mod harness;
pub mod proxy;
pub mod relay_floor;
pub mod report;
pub mod rpc;
pub mod snooper_peer;
pub mod soak;
pub mod ssz_study;
