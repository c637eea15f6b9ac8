//! Walks SSZ bytes against a [`Ty`] and reports the first fault with its field path and offset.
//!
//! Nothing here allocates in proportion to the input: offsets, lengths and limits are checked
//! on the borrowed bytes, so a hostile body cannot make the decoder that runs afterwards reserve
//! memory for a list it will never fill.

use std::fmt;

use super::schema::Ty;

/// What is wrong with a piece of SSZ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SszProblem {
    /// Fewer bytes than the fixed part needs.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// A fixed-size value of the wrong size.
    WrongSize {
        /// The size of the type.
        expected: usize,
        /// The size present.
        got: usize,
    },
    /// The first offset of a container does not point at the end of its fixed part.
    FirstOffset {
        /// Where it must point.
        expected: usize,
        /// Where it points.
        got: usize,
    },
    /// An offset smaller than the one before it.
    OffsetDecreasing {
        /// The previous offset.
        previous: usize,
        /// This offset.
        got: usize,
    },
    /// An offset past the end of the enclosing value.
    OffsetOutOfRange {
        /// The offset.
        offset: usize,
        /// The length of the enclosing value.
        len: usize,
    },
    /// A list (or byte list) with more elements than its limit.
    OverLimit {
        /// Elements present (bytes for a byte list).
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A list of fixed-size elements whose length is not a multiple of the element size.
    NotMultiple {
        /// Bytes present.
        len: usize,
        /// The element size.
        element: usize,
    },
    /// A boolean byte other than 0 or 1.
    InvalidBool(u8),
    /// An enumeration byte out of range.
    InvalidTag {
        /// The byte.
        got: u8,
        /// Number of valid values.
        values: u8,
    },
    /// A rule the layout walk cannot see (reported by the typed decoder afterwards).
    Other(String),
}

impl fmt::Display for SszProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SszProblem::Truncated { needed, got } => {
                write!(f, "truncated: needs at least {needed} bytes, got {got}")
            }
            SszProblem::WrongSize { expected, got } => {
                write!(f, "wrong size: expected {expected} bytes, got {got}")
            }
            SszProblem::FirstOffset { expected, got } => {
                write!(
                    f,
                    "first offset is {got}, must be {expected} (the end of the fixed part)"
                )
            }
            SszProblem::OffsetDecreasing { previous, got } => {
                write!(
                    f,
                    "offset {got} is smaller than the previous offset {previous}"
                )
            }
            SszProblem::OffsetOutOfRange { offset, len } => {
                write!(
                    f,
                    "offset {offset} is past the end of the value ({len} bytes)"
                )
            }
            SszProblem::OverLimit { len, max } => write!(f, "length {len} is over the limit {max}"),
            SszProblem::NotMultiple { len, element } => {
                write!(
                    f,
                    "{len} bytes is not a whole number of {element}-byte elements"
                )
            }
            SszProblem::InvalidBool(b) => {
                write!(f, "boolean byte is 0x{b:02x}, must be 0x00 or 0x01")
            }
            SszProblem::InvalidTag { got, values } => {
                write!(f, "enumeration byte is {got}, must be below {values}")
            }
            SszProblem::Other(message) => f.write_str(message),
        }
    }
}

/// An SSZ fault: which container, which field, at which byte of the input, and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid SSZ {container}: {path} at byte {offset}: {problem}")]
pub struct SszError {
    /// The top-level container being decoded.
    pub container: String,
    /// The field path inside it (`payload.transactions[3]`, `.` for the container itself).
    pub path: String,
    /// Absolute byte offset in the input where the fault is.
    pub offset: usize,
    /// What is wrong.
    pub problem: SszProblem,
}

/// The byte slices of the fields of container `ty` in `bytes`, after checking `bytes` against
/// `ty`: lets a reader pick a field (a payload inside a beacon block, the blobs of a bundle)
/// without decoding the rest.
pub fn fields<'a>(ty: &Ty, bytes: &'a [u8]) -> Result<Vec<&'a [u8]>, SszError> {
    validate(ty, bytes)?;
    Ok(container_fields(ty, bytes))
}

/// Checks `bytes` against `ty` without decoding or allocating in proportion to the input.
pub fn validate(ty: &Ty, bytes: &[u8]) -> Result<(), SszError> {
    let mut walker = Walker { path: Vec::new() };
    walker
        .walk(ty, bytes, 0)
        .map_err(|(path, offset, problem)| SszError {
            container: ty.name(),
            path: if path.is_empty() { ".".into() } else { path },
            offset,
            problem,
        })
}

/// One step of a field path.
enum Step {
    Field(&'static str),
    Index(usize),
}

struct Walker {
    path: Vec<Step>,
}

type Fault = (String, usize, SszProblem);

impl Walker {
    fn fault(&self, offset: usize, problem: SszProblem) -> Fault {
        let mut path = String::new();
        for step in &self.path {
            match step {
                Step::Field(name) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                }
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        (path, offset, problem)
    }

    /// Walks `bytes` (which start at absolute offset `at`) as a value of `ty`.
    fn walk(&mut self, ty: &Ty, bytes: &[u8], at: usize) -> Result<(), Fault> {
        match ty {
            Ty::Fixed(n) => self.exact(*n, bytes, at),
            Ty::Bool => {
                self.exact(1, bytes, at)?;
                match bytes[0] {
                    0 | 1 => Ok(()),
                    b => Err(self.fault(at, SszProblem::InvalidBool(b))),
                }
            }
            Ty::Tag(values) => {
                self.exact(1, bytes, at)?;
                if bytes[0] < *values {
                    Ok(())
                } else {
                    Err(self.fault(
                        at,
                        SszProblem::InvalidTag {
                            got: bytes[0],
                            values: *values,
                        },
                    ))
                }
            }
            Ty::Bytes(max) => {
                if bytes.len() > *max {
                    return Err(self.fault(
                        at,
                        SszProblem::OverLimit {
                            len: bytes.len(),
                            max: *max,
                        },
                    ));
                }
                Ok(())
            }
            Ty::List(elem, max) => self.list(elem, *max, bytes, at),
            Ty::Container(_, fields) => {
                let fixed_part: usize = fields.iter().map(|f| f.ty.fixed_size().unwrap_or(4)).sum();
                if bytes.len() < fixed_part {
                    return Err(self.fault(
                        at,
                        SszProblem::Truncated {
                            needed: fixed_part,
                            got: bytes.len(),
                        },
                    ));
                }
                // First pass: the fixed part, and the offsets of the variable fields.
                let mut variable: Vec<(usize, &'static Ty, &'static str, usize)> = Vec::new();
                let mut cursor = 0;
                for field in fields.iter() {
                    match field.ty.fixed_size() {
                        Some(size) => {
                            self.path.push(Step::Field(field.name));
                            self.walk(field.ty, &bytes[cursor..cursor + size], at + cursor)?;
                            self.path.pop();
                            cursor += size;
                        }
                        None => {
                            let offset = read_offset(bytes, cursor);
                            variable.push((offset, field.ty, field.name, cursor));
                            cursor += 4;
                        }
                    }
                }
                if variable.is_empty() && bytes.len() != fixed_part {
                    return Err(self.fault(
                        at,
                        SszProblem::WrongSize {
                            expected: fixed_part,
                            got: bytes.len(),
                        },
                    ));
                }
                // Second pass: offsets in range and in order, then each variable field.
                for i in 0..variable.len() {
                    let (offset, ty, name, offset_at) = variable[i];
                    self.path.push(Step::Field(name));
                    if i == 0 && offset != fixed_part {
                        return Err(self.fault(
                            at + offset_at,
                            SszProblem::FirstOffset {
                                expected: fixed_part,
                                got: offset,
                            },
                        ));
                    }
                    if offset > bytes.len() {
                        return Err(self.fault(
                            at + offset_at,
                            SszProblem::OffsetOutOfRange {
                                offset,
                                len: bytes.len(),
                            },
                        ));
                    }
                    let end = variable.get(i + 1).map_or(bytes.len(), |next| next.0);
                    if end < offset {
                        return Err(self.fault(
                            at + variable[i + 1].3,
                            SszProblem::OffsetDecreasing {
                                previous: offset,
                                got: end,
                            },
                        ));
                    }
                    if end > bytes.len() {
                        return Err(self.fault(
                            at + variable[i + 1].3,
                            SszProblem::OffsetOutOfRange {
                                offset: end,
                                len: bytes.len(),
                            },
                        ));
                    }
                    self.walk(ty, &bytes[offset..end], at + offset)?;
                    self.path.pop();
                }
                Ok(())
            }
        }
    }

    fn exact(&self, size: usize, bytes: &[u8], at: usize) -> Result<(), Fault> {
        if bytes.len() != size {
            return Err(self.fault(
                at,
                SszProblem::WrongSize {
                    expected: size,
                    got: bytes.len(),
                },
            ));
        }
        Ok(())
    }

    fn list(&mut self, elem: &Ty, max: usize, bytes: &[u8], at: usize) -> Result<(), Fault> {
        if let Some(size) = elem.fixed_size() {
            if !bytes.len().is_multiple_of(size) {
                return Err(self.fault(
                    at,
                    SszProblem::NotMultiple {
                        len: bytes.len(),
                        element: size,
                    },
                ));
            }
            let count = bytes.len() / size;
            if count > max {
                return Err(self.fault(at, SszProblem::OverLimit { len: count, max }));
            }
            // Opaque fixed elements (bytes, hashes, blobs) need no per-element walk.
            if matches!(elem, Ty::Fixed(_)) {
                return Ok(());
            }
            for i in 0..count {
                self.path.push(Step::Index(i));
                self.walk(elem, &bytes[i * size..(i + 1) * size], at + i * size)?;
                self.path.pop();
            }
            return Ok(());
        }
        if bytes.is_empty() {
            return Ok(());
        }
        if bytes.len() < 4 {
            return Err(self.fault(
                at,
                SszProblem::Truncated {
                    needed: 4,
                    got: bytes.len(),
                },
            ));
        }
        let first = read_offset(bytes, 0);
        if !first.is_multiple_of(4) || first == 0 {
            return Err(self.fault(
                at,
                SszProblem::Other(format!(
                    "first offset {first} of a list is not a non-zero multiple of 4"
                )),
            ));
        }
        if first > bytes.len() {
            return Err(self.fault(
                at,
                SszProblem::OffsetOutOfRange {
                    offset: first,
                    len: bytes.len(),
                },
            ));
        }
        let count = first / 4;
        if count > max {
            return Err(self.fault(at, SszProblem::OverLimit { len: count, max }));
        }
        let mut start = first;
        for i in 0..count {
            let end = if i + 1 < count {
                read_offset(bytes, (i + 1) * 4)
            } else {
                bytes.len()
            };
            self.path.push(Step::Index(i));
            if end < start {
                return Err(self.fault(
                    at + (i + 1) * 4,
                    SszProblem::OffsetDecreasing {
                        previous: start,
                        got: end,
                    },
                ));
            }
            if end > bytes.len() {
                return Err(self.fault(
                    at + (i + 1) * 4,
                    SszProblem::OffsetOutOfRange {
                        offset: end,
                        len: bytes.len(),
                    },
                ));
            }
            self.walk(elem, &bytes[start..end], at + start)?;
            self.path.pop();
            start = end;
        }
        Ok(())
    }
}

/// The byte slices of the fields of a container, in field order.
///
/// Only for bytes that [`validate`] accepted against the same container type: the offsets are
/// then known to be in range and in order, so this only reads them.
pub(crate) fn container_fields<'a>(ty: &Ty, bytes: &'a [u8]) -> Vec<&'a [u8]> {
    let Ty::Container(_, fields) = ty else {
        return vec![bytes];
    };
    let mut out = Vec::with_capacity(fields.len());
    let mut variable: Vec<(usize, usize)> = Vec::new(); // (index in out, offset)
    let mut cursor = 0;
    for field in fields.iter() {
        match field.ty.fixed_size() {
            Some(size) => {
                out.push(&bytes[cursor..cursor + size]);
                cursor += size;
            }
            None => {
                variable.push((out.len(), read_offset(bytes, cursor)));
                out.push(&bytes[..0]);
                cursor += 4;
            }
        }
    }
    for i in 0..variable.len() {
        let (index, start) = variable[i];
        let end = variable.get(i + 1).map_or(bytes.len(), |next| next.1);
        out[index] = &bytes[start..end];
    }
    out
}

fn read_offset(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssz::schema::PAYLOAD_STATUS;

    fn hex(s: &str) -> Vec<u8> {
        const_hex::decode(s.replace(' ', "")).unwrap()
    }

    #[test]
    fn spec_payload_status_examples_walk() {
        let a = hex(&format!("00 09000000 29000000 {}", "ab".repeat(32)));
        assert_eq!(a.len(), 41);
        validate(&PAYLOAD_STATUS, &a).unwrap();
        let b = hex("01 09000000 09000000 04000000 62616420737461746520726f6f74");
        assert_eq!(b.len(), 27);
        validate(&PAYLOAD_STATUS, &b).unwrap();
    }

    #[test]
    fn faults_name_field_and_offset() {
        let err = validate(&PAYLOAD_STATUS, &hex("00 09000000")).unwrap_err();
        assert_eq!(err.problem, SszProblem::Truncated { needed: 9, got: 5 });
        assert_eq!(
            err.to_string(),
            "invalid SSZ PayloadStatus: . at byte 0: truncated: needs at least 9 bytes, got 5"
        );

        let err = validate(&PAYLOAD_STATUS, &hex("05 09000000 09000000")).unwrap_err();
        assert_eq!((err.path.as_str(), err.offset), ("status", 0));
        assert_eq!(err.problem, SszProblem::InvalidTag { got: 5, values: 4 });

        let err = validate(&PAYLOAD_STATUS, &hex("00 0a000000 0a000000 00")).unwrap_err();
        assert_eq!((err.path.as_str(), err.offset), ("latest_valid_hash", 1));
        assert_eq!(
            err.problem,
            SszProblem::FirstOffset {
                expected: 9,
                got: 10
            }
        );

        // lvh of 31 bytes is not a whole Hash32
        let err = validate(
            &PAYLOAD_STATUS,
            &hex(&format!("00 09000000 28000000 {}", "ab".repeat(31))),
        )
        .unwrap_err();
        assert_eq!((err.path.as_str(), err.offset), ("latest_valid_hash", 9));
        assert_eq!(
            err.problem,
            SszProblem::NotMultiple {
                len: 31,
                element: 32
            }
        );

        // two hashes in an Optional
        let err = validate(
            &PAYLOAD_STATUS,
            &hex(&format!("00 09000000 49000000 {}", "ab".repeat(64))),
        )
        .unwrap_err();
        assert_eq!(err.problem, SszProblem::OverLimit { len: 2, max: 1 });

        let err = validate(&PAYLOAD_STATUS, &hex("00 09000000 ff000000")).unwrap_err();
        assert_eq!((err.path.as_str(), err.offset), ("latest_valid_hash", 5));
        assert_eq!(
            err.problem,
            SszProblem::OffsetOutOfRange {
                offset: 255,
                len: 9
            }
        );

        // error string with an inner offset pointing backwards
        let err = validate(&PAYLOAD_STATUS, &hex("01 09000000 09000000 08000000 61")).unwrap_err();
        assert_eq!(err.path, "validation_error");
        assert_eq!(
            err.problem,
            SszProblem::OffsetOutOfRange { offset: 8, len: 5 }
        );
    }
}
