//! The one JSON reader of the fast paths: JSON's whitespace rule, stepping over strings and
//! values, and the [`Cursor`] the fixed-shape readers read with. The scanner
//! ([`crate::scan`]), the fixed-shape readers (`fixed_json`), the blob answers (`bulk`) and the
//! recorder's batch test all read with these, so a byte means the same thing to each of them.
//!
//! Nothing here allocates or unescapes: strings are stepped over with `memchr`, from quote to
//! quote. Every reader returns `None` at the first byte it does not allow; its caller then
//! takes the serde path (a decode) or answers "unknown" (a scan).
//!
//! Not here: serde's encode and decode ([`crate::json`]), the reader of a body over the
//! frames it arrived in ([`crate::json::frames`]).

use alloy_primitives::U256;

/// JSON's whitespace: space, tab, line feed, carriage return. Not `u8::is_ascii_whitespace`,
/// which also takes form feed: the fast paths would then accept a document serde refuses.
pub fn is_ws(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The index of the first byte at or after `i` that is not whitespace (`b.len()` if none).
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// The first byte of `b` that is not whitespace.
pub fn first_byte(b: &[u8]) -> Option<u8> {
    b.get(skip_ws(b, 0)).copied()
}

/// The end (one past the closing quote) of the string starting at `b[i] == '"'`.
pub(crate) fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2; // an escape: skip the escaped byte
        if j > b.len() {
            return None;
        }
    }
}

/// The end of the value starting at `i` (no whitespace before it). Objects and arrays are
/// matched by depth only (their insides are not checked); a scalar runs to the next
/// separator or whitespace.
pub(crate) fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !is_ws(&b[j]) {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// A cursor over a JSON document of a known, fixed shape: every method
/// returns `None` at the first byte that is not what the shape allows, and the caller then
/// takes the general serde path — so this path can only be faster, never different.
pub(crate) struct Cursor<'a> {
    /// The document read.
    pub(crate) doc: &'a [u8],
    /// Where the next read starts.
    pub(crate) at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `doc`.
    pub(crate) fn new(doc: &'a [u8]) -> Cursor<'a> {
        Cursor { doc, at: 0 }
    }

    /// Steps over whitespace.
    pub(crate) fn ws(&mut self) {
        self.at = skip_ws(self.doc, self.at);
    }

    /// Consumes `token` (after whitespace).
    pub(crate) fn eat(&mut self, token: &[u8]) -> Option<()> {
        self.ws();
        self.doc[self.at..]
            .starts_with(token)
            .then(|| self.at += token.len())
    }

    /// Whether `token` comes next (after whitespace), consuming it if so.
    pub(crate) fn next_is(&mut self, token: &[u8]) -> bool {
        self.eat(token).is_some()
    }

    /// A `"0x…"` string of exactly `out.len()` bytes, decoded into `out`.
    pub(crate) fn hex(&mut self, out: &mut [u8]) -> Option<()> {
        let digits = self.hex_of_width(out.len())?;
        const_hex::decode_to_slice(digits, out).ok()
    }

    /// The digits of a `"0x…"` string of exactly `len` bytes, not yet checked.
    pub(crate) fn hex_of_width(&mut self, len: usize) -> Option<&'a [u8]> {
        self.eat(b"\"0x")?;
        let end = self.at + 2 * len;
        if self.doc.get(end) != Some(&b'"') {
            return None;
        }
        let digits = &self.doc[self.at..end];
        self.at = end + 1;
        Some(digits)
    }

    /// A fixed-size value (hash, address, bloom) from a `"0x…"` string of exactly its size.
    pub(crate) fn fixed<T: Default + AsMut<[u8]>>(&mut self) -> Option<T> {
        let mut value = T::default();
        self.hex(value.as_mut())?;
        Some(value)
    }

    /// An object key: `"name":`.
    pub(crate) fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b"\"")?;
        let start = self.at;
        let len = memchr::memchr(b'"', &self.doc[start..])?;
        self.at = start + len + 1;
        self.eat(b":")?;
        Some(&self.doc[start..start + len])
    }

    /// `[` item (`,` item)* `]`, calling `item` for each; an empty list is allowed.
    pub(crate) fn list(
        &mut self,
        mut item: impl FnMut(&mut Cursor<'a>) -> Option<()>,
    ) -> Option<()> {
        self.eat(b"[")?;
        if self.next_is(b"]") {
            return Some(());
        }
        loop {
            item(self)?;
            if self.next_is(b"]") {
                return Some(());
            }
            self.eat(b",")?;
        }
    }

    /// A list whose items `item` reads, collected.
    pub(crate) fn list_of<T>(
        &mut self,
        mut item: impl FnMut(&mut Cursor<'a>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut items = Vec::new();
        self.list(|c| {
            items.push(item(c)?);
            Some(())
        })?;
        Some(items)
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.ws();
        (self.at == self.doc.len()).then_some(())
    }

    /// The hex digits of a `"0x…"` string (any length), not yet decoded.
    pub(crate) fn hex_digits(&mut self) -> Option<&'a [u8]> {
        self.eat(b"\"0x")?;
        let start = self.at;
        let len = memchr::memchr(b'"', &self.doc[start..])?;
        self.at = start + len + 1;
        Some(&self.doc[start..start + len])
    }

    /// A quantity: `"0x0"` or `"0x"` and up to `max_digits` hex digits without a leading
    /// zero (the canonical form; any other the serde path judges).
    pub(crate) fn quantity_digits(&mut self, max_digits: usize) -> Option<&'a [u8]> {
        let digits = self.hex_digits()?;
        let canonical = !digits.is_empty()
            && digits.len() <= max_digits
            && (digits == b"0" || digits[0] != b'0')
            && digits.iter().all(u8::is_ascii_hexdigit);
        canonical.then_some(digits)
    }

    /// A `u64` quantity.
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let digits = self.quantity_digits(16)?;
        u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    /// A `U256` quantity.
    pub(crate) fn u256(&mut self) -> Option<U256> {
        let digits = self.quantity_digits(64)?;
        U256::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    /// Bytes of any length: `"0x"` and an even number of hex digits.
    pub(crate) fn bytes(&mut self) -> Option<alloy_primitives::Bytes> {
        let digits = self.hex_digits()?;
        if digits.len() % 2 != 0 {
            return None;
        }
        let mut out = vec![0; digits.len() / 2];
        const_hex::decode_to_slice(digits, &mut out).ok()?;
        Some(out.into())
    }

    /// `true` or `false`.
    pub(crate) fn bool(&mut self) -> Option<bool> {
        if self.next_is(b"true") {
            Some(true)
        } else if self.next_is(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// An object: `{` key value (`,` key value)* `}`, calling `field` with each key (an empty
    /// object is allowed); `field` must consume the value.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Cursor<'a>, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.eat(b"{")?;
        if self.next_is(b"}") {
            return Some(());
        }
        loop {
            let key = self.key()?;
            field(self, key)?;
            if self.next_is(b"}") {
                return Some(());
            }
            self.eat(b",")?;
        }
    }
}

/// Sets `slot` once: a key given twice is not for the fast path.
pub(crate) fn once<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_json_s_four_bytes_only() {
        let ws: Vec<u8> = (0..=255u8).filter(is_ws).collect();
        assert_eq!(ws, b"\t\n\r ");
        assert_eq!(skip_ws(b" \t\r\n[", 0), 4);
        assert_eq!(
            first_byte(b"\x0c["),
            Some(0x0c),
            "form feed is not JSON whitespace"
        );
        assert_eq!(first_byte(b" \n"), None);
    }

    #[test]
    fn values_are_stepped_over_to_their_end() {
        let doc = br#"{"a":"x\"y","b":[1,{"c":"]"}],"d":true}"#;
        assert_eq!(skip_string(doc, 5), Some(11));
        assert_eq!(skip_value(doc, 16), Some(29));
        assert_eq!(skip_value(doc, 34), Some(38));
        assert_eq!(skip_value(doc, 0), Some(doc.len()));
        assert_eq!(skip_value(b"12 ", 0), Some(2));
        assert_eq!(skip_value(br#""open"#, 0), None);
        assert_eq!(skip_value(b"[1,[2]", 0), None);
    }

    #[test]
    fn the_cursor_reads_a_fixed_shape_and_refuses_anything_else() {
        let mut c = Cursor::new(b" { \"k\" : [ \"0x0a\" , \"0x0b\" ] , \"n\":\"0x1f\" } ");
        let (mut list, mut n) = (None, None);
        c.object(|c, key| match key {
            b"k" => {
                let v = c.list_of(Cursor::fixed::<[u8; 1]>);
                once(&mut list, v)
            }
            b"n" => {
                let v = c.u64();
                once(&mut n, v)
            }
            _ => None,
        })
        .unwrap();
        c.end().unwrap();
        assert_eq!((list, n), (Some(vec![[10], [11]]), Some(31)));
        assert_eq!(Cursor::new(br#""0x01f""#).u64(), None, "not canonical");
        assert_eq!(
            Cursor::new(br#""0x0a""#).fixed::<[u8; 2]>(),
            None,
            "too short"
        );
        assert_eq!(Cursor::new(b"\x0c[]").list(|_| Some(())), None);
        let mut once_only = Some(1);
        assert_eq!(once(&mut once_only, Some(2)), None);
    }
}
