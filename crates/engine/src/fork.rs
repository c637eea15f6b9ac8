//! Engine API forks and their `Eth-Execution-Version` names.
//!
//! Only named forks that change an Engine API body schema appear here; blob-parameter-only
//! (BPO) forks map onto the named fork they layer on, as the REST-SSZ spec's versioning model
//! requires. What a fork changes on the wire lives in [`crate::method`] and [`crate::message`].

use std::{fmt, str::FromStr};

use crate::error::Error;

/// A named fork with an Engine API, in activation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fork {
    /// The Merge (Bellatrix on the consensus side).
    Paris,
    /// Withdrawals (Capella).
    Shanghai,
    /// Blobs, EIP-4844 (Deneb).
    Cancun,
    /// Execution requests, EIP-7685 (Electra).
    Prague,
    /// PeerDAS cell proofs, EIP-7594 (Fulu).
    Osaka,
    /// Block access lists, EIP-7928 (Gloas).
    Amsterdam,
}

impl Fork {
    /// Every fork, oldest first.
    pub const ALL: [Fork; 6] = [
        Fork::Paris,
        Fork::Shanghai,
        Fork::Cancun,
        Fork::Prague,
        Fork::Osaka,
        Fork::Amsterdam,
    ];

    /// The value of the `Eth-Execution-Version` header for this fork.
    pub const fn name(self) -> &'static str {
        match self {
            Fork::Paris => "paris",
            Fork::Shanghai => "shanghai",
            Fork::Cancun => "cancun",
            Fork::Prague => "prague",
            Fork::Osaka => "osaka",
            Fork::Amsterdam => "amsterdam",
        }
    }

    /// True when payloads of this fork carry withdrawals.
    pub fn has_withdrawals(self) -> bool {
        self >= Fork::Shanghai
    }

    /// True when payloads of this fork carry blob gas fields and a parent beacon block root.
    pub fn has_blobs(self) -> bool {
        self >= Fork::Cancun
    }

    /// True when payloads of this fork carry EIP-7685 execution requests.
    pub fn has_requests(self) -> bool {
        self >= Fork::Prague
    }

    /// True when blob bundles of this fork carry 128 cell proofs per blob (`BlobsBundleV2`).
    pub fn has_cell_proofs(self) -> bool {
        self >= Fork::Osaka
    }

    /// True when payloads of this fork are `ExecutionPayloadV4` (a block access list and a slot
    /// number) and bodies carry block access lists.
    pub fn has_block_access_list(self) -> bool {
        self >= Fork::Amsterdam
    }
}

impl fmt::Display for Fork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fork {
    type Err = Error;

    /// Parses a header value; case-insensitive and tolerant of surrounding blanks, because
    /// HTTP header values are compared that way in practice.
    fn from_str(s: &str) -> Result<Self, Error> {
        let wanted = s.trim();
        Fork::ALL
            .into_iter()
            .find(|fork| fork.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| Error::UnknownFork(wanted.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order() {
        let names: Vec<_> = Fork::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "paris",
                "shanghai",
                "cancun",
                "prague",
                "osaka",
                "amsterdam"
            ]
        );
        for fork in Fork::ALL {
            assert_eq!(fork.name().parse::<Fork>().unwrap(), fork);
            assert_eq!(fork.name().to_uppercase().parse::<Fork>().unwrap(), fork);
        }
        assert!(Fork::Paris < Fork::Amsterdam);
    }

    #[test]
    fn unknown_fork_names_the_value() {
        let err = "bogota".parse::<Fork>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown fork \"bogota\" (expected one of paris, shanghai, cancun, prague, osaka, amsterdam)"
        );
    }
}
