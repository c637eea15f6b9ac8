//! The two SSZ shapes colibri's format is made of, as macros over `ethereum_ssz`: containers
//! whose decode errors name the container and field (`AccountProof.state_proof: …`), and unions
//! whose options may include a `None` anywhere and whose selector is checked against the
//! options there are.
//!
//! Every length is bounded by the types' limits before anything is allocated (`ssz_types`
//! lists check their item count against the limit first; offsets are checked against the
//! input's length). What does not live here: the containers themselves (`types`).

use ssz::DecodeError;

/// Wraps a decode error of `field` of `container` so that the message names both.
pub(crate) fn named(container: &str, field: &str, e: DecodeError) -> DecodeError {
    let inner = match e {
        DecodeError::BytesInvalid(s) => s,
        other => format!("{other:?}"),
    };
    DecodeError::BytesInvalid(format!("{container}.{field}: {inner}"))
}

/// The message of a decode error (the field path and what was wrong).
pub fn describe(e: &DecodeError) -> String {
    match e {
        DecodeError::BytesInvalid(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// One field of a container as [`split_fields`] reads it: its name, and its length when fixed
/// (`None`: variable, an offset in the fixed part).
pub(crate) type FieldLayout = (&'static str, Option<usize>);

/// Cuts a container's `bytes` into its fields' bytes (`parts`, one per field of `layout`), with
/// the checks of `ssz::SszDecoderBuilder` (a fixed field past the end, an offset short, into the
/// fixed part, past the end or decreasing, bytes after a fixed-size container), errors naming
/// `container` and the field. One function for every container, so that the offset checks
/// are not copied into each container's decoder.
pub(crate) fn split_fields<'a>(
    container: &str,
    bytes: &'a [u8],
    layout: &[FieldLayout],
    parts: &mut [&'a [u8]],
) -> Result<(), DecodeError> {
    let invalid_length = |expected| DecodeError::InvalidByteLength {
        len: bytes.len(),
        expected,
    };
    let (mut fixed_end, mut first, mut previous) = (0usize, None, None);
    // A variable field's part is first the bytes from its offset to the end.
    for ((field, fixed), part) in layout.iter().zip(parts.iter_mut()) {
        let start = fixed_end;
        let len = fixed.unwrap_or(ssz::BYTES_PER_LENGTH_OFFSET);
        fixed_end = start.saturating_add(len);
        let here = bytes.get(start..fixed_end);
        if fixed.is_some() {
            let e = invalid_length(fixed_end);
            *part = here.ok_or_else(|| named(container, field, e))?;
            continue;
        }
        let offset = ssz::read_offset(bytes.get(start..).unwrap_or_default())
            .and_then(|o| checked_offset(o, previous, bytes.len()))
            .map_err(|e| named(container, field, e))?;
        first = first.or(Some(offset));
        previous = Some(offset);
        *part = bytes.get(offset..).unwrap_or_default();
    }
    let offsets_error = |e| Err(named(container, "(offsets)", e));
    match first {
        None if fixed_end != bytes.len() => return offsets_error(invalid_length(fixed_end)),
        Some(o) if o < fixed_end => return offsets_error(DecodeError::OffsetIntoFixedPortion(o)),
        Some(o) if o > fixed_end => {
            return offsets_error(DecodeError::OffsetSkipsVariableBytes(o));
        }
        _ => {}
    }
    // Each variable part ends where the next one starts (offsets do not decrease).
    let mut next_len = 0;
    for ((_, fixed), part) in layout.iter().zip(parts.iter_mut()).rev() {
        if fixed.is_none() {
            let tail = *part;
            *part = tail
                .get(..tail.len().saturating_sub(next_len))
                .unwrap_or_default();
            next_len = tail.len();
        }
    }
    Ok(())
}

/// `offset` if it is within `len` bytes and not before `previous` (as `ssz` checks offsets).
fn checked_offset(
    offset: usize,
    previous: Option<usize>,
    len: usize,
) -> Result<usize, DecodeError> {
    if offset > len {
        Err(DecodeError::OffsetOutOfBounds(offset))
    } else if previous.is_some_and(|p| p > offset) {
        Err(DecodeError::OffsetsAreDecreasing(offset))
    } else {
        Ok(offset)
    }
}

/// A container: the struct with `Encode` derived, and a `Decode` that names the field that
/// failed. Extra derives (e.g. `TreeHash`) go in the attributes.
macro_rules! container {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, ssz_derive::Encode)]
        pub struct $name { $($(#[$fm])* pub $f: $t),+ }

        impl ssz::Decode for $name {
            fn is_ssz_fixed_len() -> bool {
                true $(&& <$t as ssz::Decode>::is_ssz_fixed_len())+
            }
            fn ssz_fixed_len() -> usize {
                if <Self as ssz::Decode>::is_ssz_fixed_len() {
                    0 $(+ <$t as ssz::Decode>::ssz_fixed_len())+
                } else {
                    ssz::BYTES_PER_LENGTH_OFFSET
                }
            }
            fn from_ssz_bytes(bytes: &[u8]) -> Result<Self, ssz::DecodeError> {
                let name = stringify!($name);
                let layout = [$((
                    stringify!($f),
                    <$t as ssz::Decode>::is_ssz_fixed_len()
                        .then(<$t as ssz::Decode>::ssz_fixed_len),
                )),+];
                let mut parts = [$({ let _ = stringify!($f); &[][..] }),+];
                $crate::ssz::split_fields(name, bytes, &layout, &mut parts)?;
                let [$($f),+] = parts;
                Ok($name {
                    $($f: <$t as ssz::Decode>::from_ssz_bytes($f)
                        .map_err(|e| $crate::ssz::named(name, stringify!($f), e))?,)+
                })
            }
        }

        // Boxed, for union options much larger than their siblings.
        impl ssz::Encode for Box<$name> {
            fn is_ssz_fixed_len() -> bool {
                <$name as ssz::Encode>::is_ssz_fixed_len()
            }
            fn ssz_fixed_len() -> usize {
                <$name as ssz::Encode>::ssz_fixed_len()
            }
            fn ssz_bytes_len(&self) -> usize {
                self.as_ref().ssz_bytes_len()
            }
            fn ssz_append(&self, buf: &mut Vec<u8>) {
                self.as_ref().ssz_append(buf)
            }
        }

        impl ssz::Decode for Box<$name> {
            fn is_ssz_fixed_len() -> bool {
                <$name as ssz::Decode>::is_ssz_fixed_len()
            }
            fn ssz_fixed_len() -> usize {
                <$name as ssz::Decode>::ssz_fixed_len()
            }
            fn from_ssz_bytes(bytes: &[u8]) -> Result<Self, ssz::DecodeError> {
                <$name as ssz::Decode>::from_ssz_bytes(bytes).map(Box::new)
            }
        }
    };
}

/// A union: an enum whose variants are the options in selector order (`None` for an option
/// without a value). Decoding refuses a selector with no option and names the union. An
/// option marked `if "feature"` is decoded only when this crate's cargo feature of that name
/// is on; without it the option is refused by name and its decoder is not linked (the
/// embedded verifiers leave out the method families they do not answer).
macro_rules! union {
    ($(#[$m:meta])* pub enum $name:ident {
        $($(#[$vm:meta])* $v:ident $(($t:ty))? = $sel:literal $(if $feature:literal)?),+ $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $v $(($t))?),+ }

        impl $name {
            /// The selector byte of this option.
            pub fn selector(&self) -> u8 {
                #[allow(unused_variables)]
                match self { $($name::$v $((union!(@bind [$t] x)))? => $sel),+ }
            }
        }

        impl ssz::Encode for $name {
            fn is_ssz_fixed_len() -> bool {
                false
            }
            fn ssz_bytes_len(&self) -> usize {
                match self { $($name::$v $((union!(@bind [$t] x)))? => 1 $(+ union!(@len [$t] x))?),+ }
            }
            fn ssz_append(&self, buf: &mut Vec<u8>) {
                buf.push(self.selector());
                match self { $($name::$v $((union!(@bind [$t] x)))? => { $(union!(@append [$t] x buf);)? }),+ }
            }
        }

        impl ssz::Decode for $name {
            fn is_ssz_fixed_len() -> bool {
                false
            }
            fn from_ssz_bytes(bytes: &[u8]) -> Result<Self, ssz::DecodeError> {
                let name = stringify!($name);
                let (selector, body) = bytes.split_first().ok_or_else(|| {
                    ssz::DecodeError::BytesInvalid(format!("{name}: no selector byte"))
                })?;
                match *selector {
                    $(
                        $(#[cfg(feature = $feature)])?
                        $sel => union!(@decode name $name $v body $($t)?),
                        $(#[cfg(not(feature = $feature))]
                        $sel => Err(ssz::DecodeError::BytesInvalid(format!(
                            "{name}.{}: option {} is not built into this verifier (cargo feature `{}`)",
                            stringify!($v), $sel, $feature
                        ))),)?
                    )+
                    s => Err(ssz::DecodeError::BytesInvalid(format!(
                        "{name}: selector {s} has no option (options: {})",
                        [$($sel.to_string()),+].join(", ")
                    ))),
                }
            }
        }
    };
    (@bind [$t:ty] $x:ident) => { $x };
    (@len [$t:ty] $x:ident) => { ssz::Encode::ssz_bytes_len($x) };
    (@append [$t:ty] $x:ident $buf:ident) => { ssz::Encode::ssz_append($x, $buf) };
    (@decode $name_str:ident $name:ident $v:ident $body:ident) => {
        if $body.is_empty() {
            Ok($name::$v)
        } else {
            Err(ssz::DecodeError::BytesInvalid(format!(
                "{}.{}: {} bytes after a None selector", $name_str, stringify!($v), $body.len()
            )))
        }
    };
    (@decode $name_str:ident $name:ident $v:ident $body:ident $t:ty) => {
        <$t as ssz::Decode>::from_ssz_bytes($body)
            .map($name::$v)
            .map_err(|e| $crate::ssz::named($name_str, stringify!($v), e))
    };
}

pub(crate) use {container, union};

#[cfg(test)]
mod tests {
    use super::describe;
    use alloy_primitives::B256;
    use ssz::{Decode, Encode};
    use ssz_types::VariableList;
    use ssz_types::typenum::{U4, U16};

    container! {
        /// Fixed and variable fields mixed, as the proof containers are.
        pub struct Mixed {
            /// Fixed.
            pub a: u64,
            /// Variable.
            pub b: VariableList<u8, U16>,
            /// Fixed.
            pub c: B256,
            /// Variable, of variable items.
            pub d: VariableList<VariableList<u8, U4>, U4>,
            /// Variable.
            pub e: VariableList<u16, U4>,
        }
    }

    /// The same container decoded by `ssz_derive`, the reference for [`split_fields`].
    #[derive(Debug, PartialEq, ssz_derive::Decode)]
    struct Reference {
        a: u64,
        b: VariableList<u8, U16>,
        c: B256,
        d: VariableList<VariableList<u8, U4>, U4>,
        e: VariableList<u16, U4>,
    }

    container! {
        /// Fixed fields only.
        pub struct Fixed {
            /// Fixed.
            pub a: u64,
            /// Fixed.
            pub c: B256,
        }
    }

    fn same_as_reference(bytes: &[u8]) -> bool {
        let ours = Mixed::from_ssz_bytes(bytes);
        let theirs = Reference::from_ssz_bytes(bytes);
        match (ours, theirs) {
            (Ok(o), Ok(t)) => (o.a, o.b, o.c, o.d, o.e) == (t.a, t.b, t.c, t.d, t.e),
            // The same error, named by container and field in ours.
            (Err(o), Err(t)) => describe(&o).ends_with(&describe(&t)),
            _ => false,
        }
    }

    /// Every value of every byte, every cut and some extensions of a valid encoding (offsets included) is
    /// taken or refused as `ssz_derive`'s decoder does, with the same values or error.
    #[test]
    fn split_fields_decodes_as_ssz_derive_does() {
        let item = |v: &[u8]| VariableList::<u8, U4>::new(v.to_vec()).unwrap();
        let value = Mixed {
            a: 7,
            b: VariableList::new(vec![1, 2, 3]).unwrap(),
            c: B256::repeat_byte(9),
            d: VariableList::new(vec![item(&[4]), item(&[]), item(&[5, 6])]).unwrap(),
            e: VariableList::new(vec![8, 9]).unwrap(),
        };
        let bytes = value.as_ssz_bytes();
        assert_eq!(Mixed::from_ssz_bytes(&bytes).unwrap(), value);
        let (mut taken, mut refused) = (0, 0);
        for at in 0..bytes.len() {
            for change in 1..=255u8 {
                let mut changed = bytes.clone();
                changed[at] ^= change;
                assert!(same_as_reference(&changed), "byte {at} ^ {change:#x}");
                match Mixed::from_ssz_bytes(&changed) {
                    Ok(_) => taken += 1,
                    Err(_) => refused += 1,
                }
            }
            assert!(same_as_reference(&bytes[..at]), "cut to {at}");
        }
        for extra in [1, 4, 40] {
            let mut long = bytes.clone();
            long.extend(std::iter::repeat_n(0, extra));
            assert!(same_as_reference(&long), "{extra} bytes more");
        }
        assert!(taken > 0 && refused > 0, "{taken} taken, {refused} refused");
    }

    /// A fixed-size container takes exactly its bytes; errors name the container and field.
    #[test]
    fn split_fields_names_what_is_wrong() {
        let value = Fixed {
            a: 1,
            c: B256::ZERO,
        };
        let bytes = value.as_ssz_bytes();
        assert_eq!(Fixed::from_ssz_bytes(&bytes).unwrap(), value);
        let short = describe(&Fixed::from_ssz_bytes(&bytes[..39]).unwrap_err());
        assert!(short.starts_with("Fixed.c: "), "{short}");
        let long = [&bytes[..], &[0]].concat();
        let long = describe(&Fixed::from_ssz_bytes(&long).unwrap_err());
        assert!(long.starts_with("Fixed.(offsets): "), "{long}");
        let mut bad = Mixed {
            a: 0,
            b: VariableList::default(),
            c: B256::ZERO,
            d: VariableList::default(),
            e: VariableList::default(),
        }
        .as_ssz_bytes();
        bad[8..12].copy_from_slice(&1000u32.to_le_bytes());
        let why = describe(&Mixed::from_ssz_bytes(&bad).unwrap_err());
        assert!(why.starts_with("Mixed.b: OffsetOutOfBounds"), "{why}");
    }
}
