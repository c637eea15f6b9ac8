//! Verified `eth_*` JSON-RPC: each answer of an untrusted execution RPC checked against an
//! execution block anchored in a verified beacon header before it is returned.
