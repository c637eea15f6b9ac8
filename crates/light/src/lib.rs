//! A beacon-chain light client (the consensus specs' sync protocol): what a verified beacon
//! header is, and which execution blocks it anchors.
