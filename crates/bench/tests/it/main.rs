//! Real-data tests: every real mainnet payload through both codecs, real blobs through the
//! bundles, and the cross-check against remerkleable on synthetic and real messages.

mod crosscheck;
mod real_data;
