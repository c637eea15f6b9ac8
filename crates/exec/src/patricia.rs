//! Merkle-Patricia proofs (spec §9.1): a list of RLP trie nodes from the root down, walked
//! along a key to the value it proves, or to the proof that the key is absent.
//!
//! Stricter than colibri (§15 item 2): a proof that ends while the key still points at a
//! child node is an error, not "found, empty"; nodes after the key is resolved are an error
//! too. What does not live here: what a value means (accounts, storage, receipts).

use alloy_primitives::{B256, keccak256};
use alloy_rlp::Header;
use alloy_trie::EMPTY_ROOT_HASH;

/// Nodes a walk may visit, embedded ones included (a 32-byte key has 64 nibbles).
const MAX_DEPTH: usize = 130;

/// One item of a trie node: an RLP string's payload or an embedded list's whole encoding.
#[derive(Clone, Copy)]
enum Item<'a> {
    String(&'a [u8]),
    List(&'a [u8]),
}

/// The items of an RLP list.
fn items(node: &[u8]) -> Result<Vec<Item<'_>>, String> {
    let mut buf = node;
    let header = Header::decode(&mut buf).map_err(|e| format!("not RLP: {e}"))?;
    if !header.list || buf.len() != header.payload_length {
        return Err("not a single RLP list".into());
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        if out.len() == 17 {
            return Err("more than 17 items".into());
        }
        let start = buf;
        let h = Header::decode(&mut buf).map_err(|e| format!("item not RLP: {e}"))?;
        let payload = buf
            .get(..h.payload_length)
            .ok_or("item runs past the node")?;
        buf = &buf[h.payload_length..];
        out.push(if h.list {
            Item::List(&start[..start.len() - buf.len()])
        } else {
            Item::String(payload)
        });
    }
    Ok(out)
}

/// Hex-prefix decoding: (is a leaf, the path's nibbles).
fn hex_prefix(encoded: &[u8]) -> Result<(bool, Vec<u8>), String> {
    let first = *encoded.first().ok_or("empty path")?;
    let flag = first >> 4;
    if flag > 3 {
        return Err(format!("path flag {flag}"));
    }
    let mut nibbles = Vec::with_capacity(encoded.len() * 2);
    if flag & 1 == 1 {
        nibbles.push(first & 0x0f);
    }
    for b in &encoded[1..] {
        nibbles.extend([b >> 4, b & 0x0f]);
    }
    Ok((flag >= 2, nibbles))
}

/// What a node points at next.
enum Next<'a> {
    /// The walk ends: the value (`None` when the key is absent).
    Done(Option<Vec<u8>>),
    /// A child by hash: the next proof node.
    Hash(B256),
    /// An embedded child node.
    Embedded(&'a [u8]),
}

fn child(item: Item<'_>) -> Result<Next<'_>, String> {
    match item {
        Item::String([]) => Ok(Next::Done(None)),
        Item::String(h) if h.len() == 32 => Ok(Next::Hash(B256::from_slice(h))),
        Item::String(h) => Err(format!("child reference of {} bytes", h.len())),
        Item::List(raw) => Ok(Next::Embedded(raw)),
    }
}

/// One step: consumes the key's nibbles this node covers.
fn step<'a>(node: &'a [u8], path: &mut &[u8]) -> Result<Next<'a>, String> {
    let items = items(node)?;
    match items.as_slice() {
        [branch @ .., value] if branch.len() == 16 => match path.split_first() {
            None => Ok(Next::Done(match value {
                Item::String([]) => None,
                Item::String(v) => Some(v.to_vec()),
                Item::List(_) => return Err("branch value is a list".into()),
            })),
            Some((nibble, rest)) => {
                *path = rest;
                child(branch[usize::from(*nibble)])
            }
        },
        [Item::String(encoded), next] => {
            let (leaf, nibbles) = hex_prefix(encoded)?;
            if !path.starts_with(&nibbles) || (leaf && path.len() != nibbles.len()) {
                return Ok(Next::Done(None));
            }
            *path = &path[nibbles.len()..];
            match (leaf, next) {
                (true, Item::String(v)) => Ok(Next::Done(Some(v.to_vec()))),
                (true, Item::List(_)) => Err("leaf value is a list".into()),
                (false, item) => child(*item),
            }
        }
        other => Err(format!("a node of {} items", other.len())),
    }
}

/// Walks `proof` from `root` along `key` (bytes; walked by nibbles). `Ok(Some(value))` when the
/// key is proven present, `Ok(None)` when proven absent; an error says which node is wrong.
pub fn walk<N: std::ops::Deref<Target = [u8]>>(
    root: B256,
    key: &[u8],
    proof: &[N],
) -> Result<Option<Vec<u8>>, String> {
    let nibbles: Vec<u8> = key.iter().flat_map(|b| [b >> 4, b & 0x0f]).collect();
    let mut path = nibbles.as_slice();
    let Some(first) = proof.first() else {
        return if root == EMPTY_ROOT_HASH {
            Ok(None)
        } else {
            Err(format!("no nodes for the non-empty root {root}"))
        };
    };
    let mut used = 1;
    let mut node: &[u8] = first;
    if keccak256(node) != root {
        return Err(format!("node 0 does not hash to the root {root}"));
    }
    for _ in 0..MAX_DEPTH {
        let at = used - 1;
        match step(node, &mut path).map_err(|e| format!("node {at}: {e}"))? {
            Next::Done(value) if used == proof.len() => return Ok(value),
            Next::Done(_) => {
                return Err(format!(
                    "{} nodes after the key is resolved at node {at}",
                    proof.len() - used
                ));
            }
            Next::Embedded(raw) => node = raw,
            Next::Hash(h) => {
                let next = proof.get(used).ok_or_else(|| {
                    format!("the proof ends at node {at}, which points on to {h}: truncated")
                })?;
                node = next;
                if keccak256(node) != h {
                    return Err(format!(
                        "node {used} does not hash to {h}, its reference in node {at}"
                    ));
                }
                used += 1;
            }
        }
    }
    Err("deeper than any key".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_trie::{HashBuilder, Nibbles, proof::ProofRetainer};

    /// A trie of `entries` and the proof of `target`.
    fn trie(entries: &[(B256, Vec<u8>)], target: B256) -> (B256, Vec<Vec<u8>>) {
        let mut sorted = entries.to_vec();
        sorted.sort();
        let retainer = ProofRetainer::new(vec![Nibbles::unpack(target)]);
        let mut hb = HashBuilder::default().with_proof_retainer(retainer);
        for (k, v) in &sorted {
            hb.add_leaf(Nibbles::unpack(k), v);
        }
        let root = hb.root();
        let nodes = hb.take_proof_nodes().into_nodes_sorted();
        (root, nodes.into_iter().map(|(_, n)| n.to_vec()).collect())
    }

    fn key(i: u8) -> B256 {
        keccak256([i])
    }

    #[test]
    fn present_absent_and_truncated() {
        let entries: Vec<_> = (0..40u8).map(|i| (key(i), vec![i + 1; 40])).collect();
        let (root, proof) = trie(&entries, key(7));
        assert_eq!(walk(root, key(7).as_slice(), &proof), Ok(Some(vec![8; 40])));
        let (root, proof) = trie(&entries, key(200));
        assert_eq!(walk(root, key(200).as_slice(), &proof), Ok(None));
        let (root, proof) = trie(&entries, key(7));
        let err = walk(root, key(7).as_slice(), &proof[..1]).unwrap_err();
        assert!(err.contains("truncated"), "{err}");
        let mut extended = proof.clone();
        extended.push(proof[0].clone());
        assert!(walk(root, key(7).as_slice(), &extended).is_err());
    }
}
