//! Lab commands: `demo`, `devnet` and `bench` (`ssz_chain`: its real-chain SSZ study). They start local clients, proxies and fake
//! ELs of their own to show or measure sszgate; an operator running sszgate beside a real CL
//! and EL needs none of them. The operator commands (`proxy`, `drive`, `convert`, `methods`,
//! `verify`, `report`) live beside this module, not in it.

pub(crate) mod bench;
pub(crate) mod devnet;
pub(crate) mod ssz_chain;
