//! In-place SSZ encoding of the large containers (built payloads, blob responses).
//!
//! `ethereum_ssz`'s `SszEncoder` writes every variable-size field into a side buffer and copies
//! it into the output at the end, once per nesting level, so a 72-blob `BuiltPayloadOsaka`
//! (9.9 MB) was written three times and grown without a size hint: measured 2.7 ms per encode
//! against 0.8 ms for one pass (see docs/benchmarks.md). Here the length of every field is known
//! up front (`Encode::ssz_bytes_len` is cheap), so the offsets are written first and each field
//! is appended once, straight into a buffer reserved to the exact size. The wire format is the
//! same; the tests compare against alloy's own encoding.

use ssz::{BYTES_PER_LENGTH_OFFSET, Encode};

/// Appends an encoded value to a buffer.
type Writer<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;

/// One field of a container: its fixed size (`None` when variable), its encoded length, and
/// how to write it.
pub(crate) struct SszField<'a> {
    fixed: Option<usize>,
    len: usize,
    write: Writer<'a>,
}

impl<'a> SszField<'a> {
    /// A field encoded by its `ssz::Encode` impl.
    pub(crate) fn of<T: Encode>(value: &'a T) -> SszField<'a> {
        let fixed = T::is_ssz_fixed_len().then(T::ssz_fixed_len);
        SszField {
            fixed,
            len: value.ssz_bytes_len(),
            write: Box::new(move |buf| value.ssz_append(buf)),
        }
    }

    /// A variable-size field written by hand.
    pub(crate) fn variable(len: usize, write: impl Fn(&mut Vec<u8>) + 'a) -> SszField<'a> {
        SszField {
            fixed: None,
            len,
            write: Box::new(write),
        }
    }

    /// A variable-size field that is a container of `fields`.
    pub(crate) fn container(fields: Vec<SszField<'a>>) -> SszField<'a> {
        let len = container_len(&fields);
        SszField::variable(len, move |buf| write_container(buf, &fields))
    }

    /// A list of fixed-size byte strings (hashes, commitments, proofs, blobs), concatenated.
    pub(crate) fn fixed_list<B: AsRef<[u8]>>(items: &'a [B]) -> SszField<'a> {
        let len = items.iter().map(|i| i.as_ref().len()).sum();
        SszField::variable(len, move |buf| {
            for item in items {
                buf.extend_from_slice(item.as_ref());
            }
        })
    }

    /// A list of variable-size elements: offsets, then the elements.
    pub(crate) fn variable_list(items: Vec<SszField<'a>>) -> SszField<'a> {
        let len = items.iter().map(|i| i.len + BYTES_PER_LENGTH_OFFSET).sum();
        SszField::variable(len, move |buf| {
            let mut offset = items.len() * BYTES_PER_LENGTH_OFFSET;
            for item in &items {
                buf.extend_from_slice(&(offset as u32).to_le_bytes());
                offset += item.len;
            }
            for item in &items {
                (item.write)(buf);
            }
        })
    }
}

/// The encoded length of a container of `fields`.
pub(crate) fn container_len(fields: &[SszField<'_>]) -> usize {
    fields
        .iter()
        .map(|f| f.fixed.unwrap_or(BYTES_PER_LENGTH_OFFSET + f.len))
        .sum()
}

/// Appends a container of `fields` to `buf`: fixed part with offsets, then the variable parts.
pub(crate) fn write_container(buf: &mut Vec<u8>, fields: &[SszField<'_>]) {
    let fixed_len: usize = fields
        .iter()
        .map(|f| f.fixed.unwrap_or(BYTES_PER_LENGTH_OFFSET))
        .sum();
    let mut offset = fixed_len;
    for field in fields {
        match field.fixed {
            Some(_) => (field.write)(buf),
            None => {
                buf.extend_from_slice(&(offset as u32).to_le_bytes());
                offset += field.len;
            }
        }
    }
    for field in fields.iter().filter(|f| f.fixed.is_none()) {
        (field.write)(buf);
    }
}

/// Encodes a container of `fields` into a buffer of exactly the right size.
pub(crate) fn encode_container(fields: &[SszField<'_>]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(container_len(fields));
    write_container(&mut buf, fields);
    buf
}
