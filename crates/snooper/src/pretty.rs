//! JSON bodies as the log shows them, without copying them: [`Json`] is a tree that borrows
//! the body's strings (a 72-blob answer's 20 MB of hex stay in the relayed frames), with
//! objects' keys sorted, and [`Json::pretty`] writes it as `serde_json::to_string_pretty`
//! writes a `serde_json::Value` of the same body, long 0x-strings shortened on the way when
//! truncating. Why not `serde_json::Value`: perf on a release snooper during 72-blob calls put
//! 34 % of its time in copying the answer's strings into a `Value` and cloning it to shorten
//! hex, 22 % in parsing it twice (`docs/benchmarks.md`, "rpc-snooper as a peer").
//!
//! [`LazyJson`] reads an answer at most once for all its readers (the log and xatu).
//!
//! Not here: the log lines around the body, the truncation rule itself (`log`).

use std::{borrow::Cow, cell::OnceCell, collections::BTreeMap, fmt};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{MapAccess, SeqAccess, Visitor},
    ser::{SerializeMap, SerializeSeq},
};
use serde_json::Number;

use crate::log::truncate_hex;

/// A parsed JSON body whose strings borrow from the body where they have no escapes.
#[derive(Debug, PartialEq)]
pub enum Json<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, read as `serde_json::Value` reads it.
    Number(Number),
    /// A string: borrowed, or unescaped into an owned one.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object, keys sorted; a repeated key keeps its last value (as `Value` does).
    Object(BTreeMap<String, Json<'a>>),
}

impl<'a> Json<'a> {
    /// Parses `bytes`; `None` when they are not one JSON value (`serde_json::from_slice`'s
    /// rules, its nesting limit included).
    pub fn parse(bytes: &'a [u8]) -> Option<Json<'a>> {
        serde_json::from_slice(bytes).ok()
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(map) => map.get(key),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The items of an array.
    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The tree indented by two spaces with sorted keys, its long 0x-strings shortened when
    /// `truncate` is set.
    pub fn pretty(&self, truncate: bool) -> String {
        let shown = Shown {
            json: self,
            truncate,
        };
        // Writing into a Vec cannot fail, and every string in the tree is UTF-8.
        serde_json::to_string_pretty(&shown).unwrap_or_default()
    }
}

/// An answer's body, read as JSON when a reader first asks and then kept for the others.
pub struct LazyJson<'a> {
    /// The body, its frames joined.
    pub body: &'a [u8],
    json: OnceCell<Option<Json<'a>>>,
}

impl<'a> LazyJson<'a> {
    /// An answer of `body`, not read yet.
    pub fn new(body: &'a [u8]) -> LazyJson<'a> {
        LazyJson {
            body,
            json: OnceCell::new(),
        }
    }

    /// The body as JSON; `None` when it is not one JSON value.
    pub fn json(&self) -> Option<&Json<'a>> {
        self.json.get_or_init(|| Json::parse(self.body)).as_ref()
    }
}

/// A tree as written: strings shortened or not.
struct Shown<'t, 'a> {
    json: &'t Json<'a>,
    truncate: bool,
}

impl Serialize for Shown<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let child = |json| Shown {
            json,
            truncate: self.truncate,
        };
        match self.json {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => match self.truncate.then(|| truncate_hex(s)).flatten() {
                Some(short) => serializer.serialize_str(&short),
                None => serializer.serialize_str(s),
            },
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&child(item))?;
                }
                seq.end()
            }
            Json::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, &child(value))?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json<'de>, E> {
        // As `Value` does: a float JSON cannot hold becomes null.
        Ok(Number::from_f64(n).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = BTreeMap::new();
        while let Some((key, value)) = map.next_entry::<String, Json<'de>>()? {
            members.insert(key, value);
        }
        Ok(Json::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the log wrote before: a `Value` tree, truncated in place, pretty-printed.
    fn through_value(body: &str, truncate: bool) -> String {
        let mut value: serde_json::Value = serde_json::from_str(body).unwrap();
        fn shorten(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => m.values_mut().for_each(shorten),
                serde_json::Value::Array(a) => a.iter_mut().for_each(shorten),
                serde_json::Value::String(s) => {
                    if let Some(short) = truncate_hex(s) {
                        *s = short;
                    }
                }
                _ => {}
            }
        }
        if truncate {
            shorten(&mut value);
        }
        serde_json::to_string_pretty(&value).unwrap()
    }

    #[test]
    fn writes_what_a_value_tree_writes() {
        let long = format!("0x{}", "ab".repeat(300));
        let bodies = [
            r#"{"z":1,"a":[true,false,null],"m":{"y":-3,"b":1.5e3,"c":0.1}}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"blobs":["{long}",null,"{long}"]}}}}"#),
            r#"{"a":"esc\"aped\u00e9\n\/","a":"last wins","k\u0041":[],"e":{}}"#.to_string(),
            r#"[1e300, 18446744073709551615, -9223372036854775808, 1.0, "0xZZ"]"#.to_string(),
            r#""just a string""#.to_string(),
            format!(r#"{{"{long}":"{long}"}}"#),
        ];
        for body in &bodies {
            for truncate in [false, true] {
                let json = Json::parse(body.as_bytes()).unwrap();
                assert_eq!(
                    json.pretty(truncate),
                    through_value(body, truncate),
                    "{body}"
                );
            }
        }
    }

    #[test]
    fn unescaped_strings_are_borrowed_and_bad_bodies_refused() {
        let body = br#"{"result":["0x0102","e\u0041"]}"#;
        let json = Json::parse(body).unwrap();
        let items = json.get("result").and_then(Json::as_array).unwrap();
        assert!(matches!(&items[0], Json::String(Cow::Borrowed("0x0102"))));
        assert!(matches!(&items[1], Json::String(Cow::Owned(s)) if s == "eA"));
        for bad in [&b"{"[..], b"[1,]", b"{} x", b"\"\xff\"", b""] {
            assert_eq!(Json::parse(bad), None, "{bad:?}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(Json::parse(deep.as_bytes()), None);
    }

    #[test]
    fn an_answer_is_read_once_for_all_its_readers() {
        let answer = LazyJson::new(br#"{"result":[null]}"#);
        let (first, second) = (answer.json().unwrap(), answer.json().unwrap());
        assert!(std::ptr::eq(first, second));
        assert_eq!(LazyJson::new(b"not json").json(), None);
    }
}
