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
                let mut builder = ssz::SszDecoderBuilder::new(bytes);
                $(builder
                    .register_type::<$t>()
                    .map_err(|e| $crate::ssz::named(name, stringify!($f), e))?;)+
                let mut decoder = builder
                    .build()
                    .map_err(|e| $crate::ssz::named(name, "(offsets)", e))?;
                Ok($name {
                    $($f: decoder
                        .decode_next()
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
