//! A JSON scanner for what is only looked at, never decoded: the JSON-RPC envelope of a
//! request (`method`, `id`) and the few facts a record keeps (block number, status, counts).
//!
//! It walks the top level of an object or array and returns the raw bytes of the values asked
//! for; every other value is skipped, strings with `memchr` from quote to quote. Nothing is
//! allocated and nothing is unescaped, so classifying a 20 MB getPayload answer costs a pass
//! of `memchr` over it, not a parse. It accepts any valid JSON; on invalid JSON it returns
//! `None` (the caller answers with a proper error or records "unknown"). It reads with the one
//! JSON reader (`crate::json::read`): its whitespace rule, its string and value steps.

use crate::json::read::{is_ws as is_json_ws, skip_string, skip_value, skip_ws as ws};

/// The members of a JSON object, walked one at a time: each key and where its value starts.
/// The caller decides whether a value is skipped (to reach the next member) or not.
struct Members<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Members<'a> {
    /// A walk over the object `b`, or `None` when `b` does not start with one.
    fn of(b: &'a [u8]) -> Option<Members<'a>> {
        let i = ws(b, 0);
        (b.get(i) == Some(&b'{')).then(|| Members { b, i: ws(b, i + 1) })
    }

    /// The next member's key and the offset of its value; `Ok(None)` at the end of the object,
    /// `Err(())` when the object is malformed.
    fn next_key(&mut self) -> Result<Option<(&'a [u8], usize)>, ()> {
        let b = self.b;
        match b.get(self.i) {
            Some(b'}') => return Ok(None),
            Some(b'"') => {}
            _ => return Err(()),
        }
        let key_end = skip_string(b, self.i).ok_or(())?;
        let key = &b[self.i + 1..key_end - 1];
        let colon = ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return Err(());
        }
        Ok(Some((key, ws(b, colon + 1))))
    }

    /// Skips the value starting at `start` and the separator after it; the value's end.
    fn skip(&mut self, start: usize) -> Result<usize, ()> {
        let end = skip_value(self.b, start).ok_or(())?;
        self.past_value(end)?;
        Ok(end)
    }

    /// Moves past the separator after a value that ends at `end`: to the next key, or onto
    /// the object's closing brace.
    fn past_value(&mut self, end: usize) -> Result<(), ()> {
        self.i = ws(self.b, end);
        match self.b.get(self.i) {
            Some(b',') => self.i = ws(self.b, self.i + 1),
            Some(b'}') => {}
            _ => return Err(()),
        }
        Ok(())
    }
}

/// The raw values of `keys` in the top level of the object `b` (`None` per key not present),
/// or `None` when `b` is not an object.
pub fn object_fields<'a, const N: usize>(
    b: &'a [u8],
    keys: [&str; N],
) -> Option<[Option<&'a [u8]>; N]> {
    let mut out = [None; N];
    let mut members = Members::of(b)?;
    while let Some((key, start)) = members.next_key().ok()? {
        let end = members.skip(start).ok()?;
        if let Some(slot) = keys.iter().position(|k| k.as_bytes() == key) {
            out[slot] = Some(&b[start..end]);
        }
    }
    Some(out)
}

/// The value of the first of `keys` met in the top level of the object `b`: which key, and
/// the bytes from the start of its value to the end of `b` (the value is not skipped, so a
/// 20 MB value costs nothing to reach). Keys before it are skipped; `None` when none is met.
pub fn value_start<'a, const N: usize>(b: &'a [u8], keys: [&str; N]) -> Option<(usize, &'a [u8])> {
    let mut members = Members::of(b)?;
    while let Some((key, start)) = members.next_key().ok()? {
        if let Some(slot) = keys.iter().position(|k| k.as_bytes() == key) {
            return Some((slot, &b[start..]));
        }
        members.skip(start).ok()?;
    }
    None
}

/// The `id` and the `result` or `error` of a JSON-RPC answer, read no further than the start
/// of the result or error: those run from the start of their value to the end of `b`, as in
/// [`value_start`], so a 20 MB result costs nothing to reach. An `id` before them is kept,
/// other members are skipped; `None` when `b` is not an object.
pub fn answer_head(b: &[u8]) -> Option<Envelope<'_>> {
    let mut out = Envelope::default();
    let mut members = Members::of(b)?;
    while let Some((key, start)) = members.next_key().ok()? {
        match key {
            b"result" => {
                out.result = Some(&b[start..]);
                break;
            }
            b"error" => {
                out.error = Some(&b[start..]);
                break;
            }
            b"id" => out.id = Some(&b[start..members.skip(start).ok()?]),
            _ => {
                members.skip(start).ok()?;
            }
        }
    }
    Some(out)
}

/// The number of strings of exactly `width` bytes (quotes excluded) in the array that `b`
/// starts with, stepping from string to string without reading them; `None` when an element
/// is not such a string (the caller then counts the slow way). For blob hex (`0x` + 262,144
/// digits) this is what makes counting 72 blobs in a 20 MB answer cost microseconds.
pub fn count_fixed_strings(b: &[u8], width: usize) -> Option<usize> {
    let mut count = 0;
    elements(b, |i| {
        if b.get(i) != Some(&b'"') || b.get(i + 1 + width) != Some(&b'"') {
            return None;
        }
        count += 1;
        Some(i + 2 + width)
    })?;
    Some(count)
}

/// Walks the top-level array `b`: `element` gets where each element starts and returns where
/// it ends; `None` when `b` is not an array or an element or separator is not as expected.
fn elements(b: &[u8], mut element: impl FnMut(usize) -> Option<usize>) -> Option<()> {
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some(());
    }
    loop {
        i = ws(b, element(i)?);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b']' => return Some(()),
            _ => return None,
        }
    }
}

/// The value under `key` when it is the last member of the object `b`, without walking it:
/// from the start of the value to the object's closing brace, blanks trimmed. When `key` is
/// not the last member the slice runs on into the members after it, so it is only for readers
/// that check that their input is exactly one value (JSON-RPC answers end with `result`).
pub fn last_value<'a>(b: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let (_, rest) = value_start(b, [key])?;
    let end = rest.iter().rposition(|c| !is_json_ws(c))?;
    (rest[end] == b'}').then(|| {
        let inner = &rest[..end];
        let last = inner
            .iter()
            .rposition(|c| !is_json_ws(c))
            .map_or(0, |i| i + 1);
        &inner[..last]
    })
}

/// Which entries of the array `b` are objects (`true`) and which `null` (`false`), for arrays
/// whose objects begin with a string of exactly `width` bytes under `first_key` (getBlobs
/// answers: `{"blob": <262,146 bytes>, "proofs": …}`). That string is stepped over at its
/// width, not read, as in [`count_fixed_strings`]; the rest of each object is skipped as
/// usual. `None` when an entry is anything else (the caller then walks the slow way).
/// Measured: walking every blob of a 72-blob answer was 9% of the proxy's CPU.
pub fn fixed_first_string_objects(b: &[u8], first_key: &str, width: usize) -> Option<Vec<bool>> {
    let mut out = Vec::new();
    elements(b, |i| {
        if b[i..].starts_with(b"null") {
            out.push(false);
            return Some(i + 4);
        }
        // `{"<first_key>":"<width bytes>"`, then the rest of the object.
        let mut members = Members::of(&b[i..])?;
        let (key, start) = members.next_key().ok()??;
        let value_end = start + 2 + width;
        if key != first_key.as_bytes()
            || b.get(i + start) != Some(&b'"')
            || b.get(i + value_end - 1) != Some(&b'"')
        {
            return None;
        }
        members.past_value(value_end).ok()?;
        while let Some((_, start)) = members.next_key().ok()? {
            members.skip(start).ok()?;
        }
        out.push(true);
        Some(i + members.i + 1)
    })?;
    Some(out)
}

/// The raw elements of the top-level array `b`, or `None` when `b` is not an array.
pub fn array_elements(b: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    elements(b, |i| {
        let end = skip_value(b, i)?;
        out.push(&b[i..end]);
        Some(end)
    })?;
    Some(out)
}

/// The contents of a JSON string without escapes (`"0x12"` -> `0x12`), `None` otherwise.
pub fn plain_str(raw: &[u8]) -> Option<&str> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

/// A JSON QUANTITY (`"0x1b4"`) as a number.
pub fn quantity(raw: &[u8]) -> Option<u64> {
    u64::from_str_radix(plain_str(raw)?.strip_prefix("0x")?, 16).ok()
}

/// The JSON-RPC envelope of one request or response object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `method`, when it is a plain string.
    pub method: Option<&'a str>,
    /// `id`, raw JSON.
    pub id: Option<&'a [u8]>,
    /// `params`, raw JSON.
    pub params: Option<&'a [u8]>,
    /// `result`, raw JSON.
    pub result: Option<&'a [u8]>,
    /// `error`, raw JSON.
    pub error: Option<&'a [u8]>,
}

/// Scans one JSON-RPC object; `None` when it is not a JSON object.
pub fn envelope(b: &[u8]) -> Option<Envelope<'_>> {
    let [method, id, params, result, error] =
        object_fields(b, ["method", "id", "params", "result", "error"])?;
    Some(Envelope {
        method: method.and_then(plain_str),
        id,
        params,
        result,
        error,
    })
}

/// The objects of a JSON-RPC body: one for a single call, the elements for a batch.
pub fn calls(b: &[u8]) -> Option<Vec<&[u8]>> {
    let i = ws(b, 0);
    match b.get(i)? {
        b'[' => array_elements(b),
        b'{' => Some(vec![b]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_reads_method_and_id_and_skips_params() {
        let body = br#" {"jsonrpc":"2.0","params":[{"a":"x\"}y","b":[1,{"c":"]"}]}],"method":"engine_newPayloadV4","id":7} "#;
        let e = envelope(body).unwrap();
        assert_eq!(e.method, Some("engine_newPayloadV4"));
        assert_eq!(e.id, Some(&b"7"[..]));
        assert_eq!(e.params.unwrap(), br#"[{"a":"x\"}y","b":[1,{"c":"]"}]}]"#);
        assert_eq!(e.result, None);
    }

    #[test]
    fn answer_head_keeps_the_id_and_stops_at_the_result() {
        let head = answer_head(br#"{"jsonrpc":"2.0","id":"a\"b","result":[1,2],"x":1}"#).unwrap();
        assert_eq!(head.id, Some(&br#""a\"b""#[..]));
        assert_eq!(head.result, Some(&br#"[1,2],"x":1}"#[..]));
        assert_eq!(head.error, None);
        let head = answer_head(br#"{"error":{"code":-32000},"id":3}"#).unwrap();
        assert_eq!(
            (head.id, head.error),
            (None, Some(&br#"{"code":-32000},"id":3}"#[..]))
        );
        let head = answer_head(br#"{"id":4}"#).unwrap();
        assert_eq!(
            (head.id, head.result, head.error),
            (Some(&b"4"[..]), None, None)
        );
        assert!(answer_head(b"[1]").is_none());
        assert!(answer_head(br#"{"id":"#).is_none());
    }

    #[test]
    fn last_value_ends_at_the_closing_brace() {
        let body = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\": [1, {\"a\":2}] \n}\n";
        assert_eq!(last_value(body, "result").unwrap(), br#"[1, {"a":2}]"#);
        // Not the last member: the slice runs on (readers then refuse it).
        let body = br#"{"result":null,"id":1}"#;
        assert_eq!(last_value(body, "result").unwrap(), br#"null,"id":1"#);
        assert_eq!(last_value(br#"{"id":1}"#, "result"), None);
        assert_eq!(last_value(br#"{"result":1"#, "result"), None);
    }

    #[test]
    fn value_start_stops_at_the_key_and_fixed_strings_count() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,2],"blobs":["0xab","0xcd","0xef"]},"tail":1}"#;
        let (which, rest) = value_start(body, ["error", "result"]).unwrap();
        assert_eq!(which, 1);
        assert!(rest.starts_with(br#"{"a":[1,2]"#));
        let (_, blobs) = value_start(rest, ["blobs"]).unwrap();
        assert_eq!(count_fixed_strings(blobs, 4), Some(3));
        assert_eq!(count_fixed_strings(blobs, 5), None);
        assert_eq!(count_fixed_strings(b"[ ]", 4), Some(0));
        assert!(value_start(body, ["nope"]).is_none());
    }

    #[test]
    fn objects_with_a_fixed_first_string_are_stepped_over() {
        let body = br#"[{"blob":"0xabcd","proofs":["0x01",{"x":"]}"}]} , null,{"blob":"0x0000"}]"#;
        assert_eq!(
            fixed_first_string_objects(body, "blob", 6),
            Some(vec![true, false, true])
        );
        // The same walk as the general one, where both apply.
        let slow: Vec<bool> = array_elements(body)
            .unwrap()
            .iter()
            .map(|e| *e != b"null")
            .collect();
        assert_eq!(slow, vec![true, false, true]);
        assert_eq!(
            fixed_first_string_objects(b" [ ] ", "blob", 6),
            Some(vec![])
        );
        // Another width, another first key, a missing separator: the slow way decides.
        assert_eq!(fixed_first_string_objects(body, "blob", 5), None);
        assert_eq!(fixed_first_string_objects(body, "proofs", 6), None);
        assert_eq!(
            fixed_first_string_objects(br#"[{"blob":"0xabcd" "p":1}]"#, "blob", 6),
            None
        );
        assert_eq!(fixed_first_string_objects(br#"[1]"#, "blob", 6), None);
    }

    #[test]
    fn batches_split_and_bad_json_is_none() {
        let calls = calls(br#"[{"id":1,"method":"a"}, {"id":"two","method":"b"}]"#).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(envelope(calls[1]).unwrap().id, Some(&br#""two""#[..]));
        assert!(envelope(br#"{"method":"a""#).is_none());
        assert!(envelope(br#"{"method" "a"}"#).is_none());
        assert!(envelope(b"[1]").is_none());
        assert!(super::calls(b"nope").is_none());
        assert_eq!(array_elements(b"[]").unwrap().len(), 0);
        assert_eq!(quantity(br#""0x1b4""#), Some(436));
        assert_eq!(quantity(br#""1b4""#), None);
    }
}
