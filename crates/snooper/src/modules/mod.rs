//! rpc-snooper's WebSocket module protocol at `/_snooper/control`: clients register modules
//! (`request_snooper`, `response_snooper`, `request_counter`, `response_tracer`) with
//! filters, and get their events, fed from the calls the front sees.
//!
//! Not here: the other management calls (`api`), numbering calls (`front`).

pub mod filter;
pub mod hub;
pub mod protocol;
pub mod socket;

pub use hub::Hub;
pub use socket::accept;

/// The control path.
pub const CONTROL_PATH: &str = "/_snooper/control";
