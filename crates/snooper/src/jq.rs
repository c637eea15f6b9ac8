//! The jq expressions of rpc-snooper's module configs (`json_query` filters,
//! `request_select`/`response_select`), run with jaq where rpc-snooper runs gojq.
//!
//! A module client is a peer: a query may not name what reads the host or ends the process
//! (`env`, `$ENV`, `input`, `halt`, `debug`, `stderr`), define filters (`def`: unbounded
//! recursion), or name the unbounded generators (`range`, `repeat`, `recurse`, `while`,
//! `until`); it is at most [`MAX_QUERY`] bytes, and a run yields at most [`MAX_OUTPUTS`]
//! values. Such a query is refused at registration, by name.
//!
//! Not here: when a query runs and what its result means (`modules`).

use jaq_core::{
    Compiler, Ctx, Vars,
    compile::Filter,
    data::JustLut,
    load::{Arena, File, Loader},
};
use jaq_json::Val;

/// The longest query accepted, in bytes.
pub const MAX_QUERY: usize = 1024;
/// Values taken from one run at most; the rest are not computed.
pub const MAX_OUTPUTS: usize = 64;

/// Names a query may not use (see the module header for why).
const REFUSED: &[&str] = &[
    "def",
    "env",
    "ENV",
    "input",
    "inputs",
    "input_filename",
    "halt",
    "halt_error",
    "debug",
    "debug_empty",
    "stderr",
    "stderr_empty",
    "range",
    "repeat",
    "recurse",
    "while",
    "until",
];

type Data = JustLut<Val>;

/// A compiled query.
pub struct Query {
    filter: Filter<jaq_core::Native<Data>>,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Query")
    }
}

impl Query {
    /// Compiles `code`, or says why not.
    pub fn compile(code: &str) -> Result<Query, String> {
        if code.len() > MAX_QUERY {
            return Err(format!(
                "query of {} bytes, more than {MAX_QUERY}",
                code.len()
            ));
        }
        if let Some(name) = identifiers(code).find(|word| REFUSED.contains(word)) {
            return Err(format!("`{name}` is not allowed in a query"));
        }
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(&arena, File { code, path: () })
            .map_err(|errors| format!("cannot parse `{code}`: {}", describe(&errors)))?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errors| format!("cannot compile `{code}`: {}", describe(&errors)))?;
        Ok(Query { filter })
    }

    /// The query's outputs on the JSON text `body` (`None` when it is not JSON); an error
    /// (or `halt`) is an `Err` item. At most [`MAX_OUTPUTS`] items.
    pub fn run(&self, body: &[u8]) -> Option<Vec<Result<serde_json::Value, ()>>> {
        let input = jaq_json::read::parse_single(body).ok()?;
        let ctx = Ctx::<Data>::new(&self.filter.lut, Vars::new([]));
        let outputs = self.filter.id.run((ctx, input));
        Some(
            outputs
                .take(MAX_OUTPUTS)
                .map(|out| out.map_err(drop).and_then(|v| to_json(&v)))
                .collect(),
        )
    }

    /// rpc-snooper's filter rule: true at the first output that is neither `null` nor
    /// `false`; false at an error first, or with no such output, or when `body` is not JSON.
    pub fn matches(&self, body: &[u8]) -> bool {
        let Some(outputs) = self.run(body) else {
            return false;
        };
        for out in outputs {
            match out {
                Err(()) => return false,
                Ok(serde_json::Value::Null | serde_json::Value::Bool(false)) => {}
                Ok(_) => return true,
            }
        }
        false
    }

    /// rpc-snooper's select rule: errors skipped, one output as is, several as an array,
    /// none (or `body` not JSON) as nothing.
    pub fn select(&self, body: &[u8]) -> Option<serde_json::Value> {
        let mut values: Vec<_> = self.run(body)?.into_iter().flatten().collect();
        match values.len() {
            0 => None,
            1 => values.pop(),
            _ => Some(serde_json::Value::Array(values)),
        }
    }
}

/// A jaq value as JSON (through its JSON text; byte strings and non-finite numbers fail).
fn to_json(value: &Val) -> Result<serde_json::Value, ()> {
    serde_json::from_str(&value.to_string()).map_err(drop)
}

/// The identifiers in `code` outside string literals (a `$` or `@` before one is dropped).
fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    // String contents become spaces, byte for byte, so spans found in `outside` are spans
    // of `code`.
    let mut outside = String::with_capacity(code.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in code.chars() {
        let was_in_string = in_string;
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            _ => {}
        }
        if was_in_string || in_string {
            outside.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            outside.push(c);
        }
    }
    word_spans(&outside)
        .into_iter()
        .map(move |(start, end)| &code[start..end])
}

/// Byte spans of the `[A-Za-z_][A-Za-z0-9_]*` words of `text`.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if word(bytes[i]) && !bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
            spans.push((start, i));
        } else if word(bytes[i]) {
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    spans
}

fn describe<T: std::fmt::Debug>(errors: &T) -> String {
    let text = format!("{errors:?}");
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CALL: &[u8] =
        br#"{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":[{"a":1},{"b":2}]}"#;

    #[test]
    fn filters_match_as_rpc_snoopers_do() {
        let q = |code| Query::compile(code).unwrap();
        assert!(q(".method == \"engine_newPayloadV4\"").matches(CALL));
        assert!(!q(".method == \"eth_call\"").matches(CALL));
        assert!(q(".id").matches(CALL));
        assert!(!q(".nothing").matches(CALL));
        assert!(!q("empty").matches(CALL));
        assert!(!q("error(\"x\")").matches(CALL));
        assert!(q("null, 1").matches(CALL));
        assert!(!q(".method").matches(b"not json"));
    }

    #[test]
    fn selects_give_one_value_an_array_or_nothing() {
        let q = |code| Query::compile(code).unwrap();
        assert_eq!(
            q(".method").select(CALL),
            Some(json!("engine_newPayloadV4"))
        );
        assert_eq!(
            q(".params[]").select(CALL),
            Some(json!([{"a": 1}, {"b": 2}]))
        );
        assert_eq!(q(".nothing[]?").select(CALL), None);
        assert_eq!(q("error(\"x\"), 7").select(CALL), Some(json!(7)));
        assert_eq!(q(".").select(b"{").map(|_| ()), None);
    }

    #[test]
    fn queries_that_reach_the_host_or_never_end_are_refused_by_name() {
        for (code, name) in [
            ("env.HOME", "env"),
            ("$ENV", "ENV"),
            ("halt", "halt"),
            ("[range(1e18)]", "range"),
            ("def f: f; f", "def"),
            ("repeat(.)", "repeat"),
            ("input", "input"),
        ] {
            let error = Query::compile(code).unwrap_err();
            assert!(error.contains(&format!("`{name}`")), "{code}: {error}");
        }
        assert!(Query::compile(".method == \"range\"").is_ok());
        assert!(Query::compile(&".".repeat(MAX_QUERY + 1)).is_err());
        assert!(Query::compile(".[").unwrap_err().contains("cannot parse"));
        assert!(Query::compile("nosuchfn").is_err());
    }

    #[test]
    fn a_run_yields_at_most_the_bound() {
        let many = Query::compile("[.params[] | keys[]] | .[], .[], .[], .[]").unwrap();
        let outputs = many.run(CALL).unwrap();
        assert_eq!(outputs.len(), 8);
        let q = Query::compile(&("(.,.) | ".repeat(10) + ".id")).unwrap();
        assert_eq!(q.run(CALL).unwrap().len(), MAX_OUTPUTS);
    }
}
