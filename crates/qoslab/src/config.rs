//! Reading configuration: [`ScenarioError`], the one error every configuration check
//! returns; `kind`-tagged tables read with exact key paths; serde's messages said in
//! the user's words. Every mechanism's configuration builds on this room; it imports
//! nothing of qoslab.
//!
//! A table such as `queue = { kind = "red", max_p = "high" }` is first buffered, then its
//! `kind` picks the variant's own struct, which is read from the buffer with its key
//! path tracked. serde's own internally tagged enums lose that path (the error would
//! name `link[1].queue` and say "expected internally tagged enum"); here it names
//! `link[1].queue.max_p`. The path inside the buffered table travels to the scenario
//! parser inside the error message (see [`encode`]), which joins it to the outer path.

use serde::de::{DeserializeOwned, Error as _};
use serde::Deserializer;

/// A scenario could not be read or is not valid.
///
/// `key` is the path of the offending key (`flow[2].rate`), `message` says what would
/// have been accepted. The run never starts; nothing is lost.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("{key}: {message}")]
pub struct ScenarioError {
    /// Path of the offending key, e.g. `link[0].rate`; empty for whole-file errors.
    pub key: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl ScenarioError {
    /// An error at `key` with `message`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Returns early with a [`ScenarioError`] at `key` unless `cond` holds.
#[macro_export]
macro_rules! ensure_scenario {
    ($cond:expr, $key:expr, $($fmt:tt)+) => {
        if !($cond) {
            return Err($crate::config::ScenarioError::new($key, format!($($fmt)+)).into());
        }
    };
}

/// A buffered configuration table.
pub type Value = serde_json::Value;

/// Marks the start and end of a key path carried inside an error message.
const MARK: char = '\u{1}';

/// An error message that carries `path` (relative to the table being read).
pub fn encode(path: &str, message: &str) -> String {
    let (inner, message) = decode(message);
    let path = join(path, &inner);
    if path.is_empty() {
        message
    } else {
        format!("{MARK}{path}{MARK}{message}")
    }
}

/// Splits a message made by [`encode`] into (path, message); other messages have an
/// empty path.
pub fn decode(message: &str) -> (String, String) {
    if let Some(rest) = message.strip_prefix(MARK) {
        if let Some((path, msg)) = rest.split_once(MARK) {
            return (path.to_string(), msg.to_string());
        }
    }
    (String::new(), message.to_string())
}

/// Joins two key paths (`"link[1].queue"` + `"dp1.max_p"`, `"stages"` + `"[0].rate"`).
pub fn join(outer: &str, inner: &str) -> String {
    match (outer.is_empty(), inner.is_empty()) {
        (_, true) => outer.to_string(),
        (true, false) => inner.to_string(),
        (false, false) if inner.starts_with('[') => format!("{outer}{inner}"),
        (false, false) => format!("{outer}.{inner}"),
    }
}

/// A key path as qoslab spells it (`rules[0].filter.dst`), leaving out the first `skip`
/// segments.
fn spell(p: &serde_path_to_error::Path, skip: usize) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter().skip(skip) {
        let name = match seg {
            Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
                continue;
            }
            Segment::Map { key } => key.as_str(),
            Segment::Enum { variant } => variant.as_str(),
            Segment::Unknown => "?",
        };
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(name);
    }
    out
}

/// Reads `T` from a buffered value, leaving out the first `skip` path segments; an
/// error's message carries its key path.
fn read<T: DeserializeOwned>(v: Value, skip: usize) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
        let path = spell(e.path(), skip);
        encode(&path, &humane(&e.into_inner().to_string()))
    })
}

/// Reads `T` from a buffered table; an error's message carries its key path.
pub fn from_value<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    read(v, 0)
}

/// A configuration enum written as a table tagged by `kind`
/// (`{ kind = "red", max_p = 0.1 }`).
///
/// Implement it by deriving `Serialize` and `Deserialize` with
/// `#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]` (which
/// makes them inherent functions reading and writing the *externally* tagged form,
/// `{ red = { max_p = 0.1 } }`) and forwarding [`Tagged::read_external`] and
/// [`Tagged::write_external`] to them; [`read_tagged`] and [`write_tagged`] then do
/// the trait impls. Read that way, a variant's fields keep their key paths in errors.
pub trait Tagged: Sized {
    /// The family's name in messages (`"queue"`, `"conditioner"`).
    const WHAT: &'static str;
    /// Every accepted `kind`, aliases included.
    const KINDS: &'static [&'static str];
    /// Reads the externally tagged form (the remote derive's `deserialize`).
    fn read_external<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
    /// Writes the externally tagged form (the remote derive's `serialize`).
    fn write_external<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
}

struct External<T>(T);

impl<'de, T: Tagged> serde::Deserialize<'de> for External<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::read_external(d).map(External)
    }
}

/// Reads a [`Tagged`] enum from its `kind`-tagged table, errors at exact key paths.
pub fn read_tagged<'de, D: Deserializer<'de>, T: Tagged>(d: D) -> Result<T, D::Error> {
    let (kind, body) = tagged(d, T::WHAT, T::KINDS)?;
    let mut ext = serde_json::Map::new();
    ext.insert(kind, body);
    // The first path segment is the variant (the kind), which is not a key in the file.
    read::<External<T>>(Value::Object(ext), 1)
        .map(|e| e.0)
        .map_err(D::Error::custom)
}

/// Writes a [`Tagged`] enum as its `kind`-tagged table.
pub fn write_tagged<S: serde::Serializer, T: Tagged>(t: &T, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::Error as _;
    use serde::Serialize as _;
    let ext = t
        .write_external(serde_json::value::Serializer)
        .map_err(S::Error::custom)?;
    let Value::Object(ext) = ext else {
        return Err(S::Error::custom("a tagged configuration must be a table"));
    };
    let mut out = serde_json::Map::new();
    for (kind, body) in ext {
        out.insert("kind".into(), Value::String(kind));
        match body {
            Value::Object(fields) => out.extend(fields),
            Value::Null => {}
            other => return Err(S::Error::custom(format!("untagged body {other}"))),
        }
    }
    Value::Object(out).serialize(s)
}

/// Reads a table tagged by `kind` (`what` names the family in messages, `kinds` lists
/// the accepted kinds); returns the kind and the table without it.
pub fn tagged<'de, D: Deserializer<'de>>(
    d: D,
    what: &str,
    kinds: &[&str],
) -> Result<(String, Value), D::Error> {
    let v = <Value as serde::Deserialize>::deserialize(d)?;
    let one_of = kinds.join(", ");
    let Value::Object(mut map) = v else {
        return Err(D::Error::custom(format!(
            "expected a {what} table with a `kind` ({one_of}), found {}",
            found(&v)
        )));
    };
    let kind = match map.remove("kind") {
        Some(Value::String(k)) => k,
        Some(other) => {
            return Err(D::Error::custom(encode(
                "kind",
                &format!(
                    "expected a {what} kind, one of {one_of}, found {}",
                    found(&other)
                ),
            )))
        }
        None => {
            return Err(D::Error::custom(format!(
                "missing `kind`: say which {what} this is, one of {one_of}"
            )))
        }
    };
    if !kinds.contains(&kind.as_str()) {
        return Err(D::Error::custom(encode(
            "kind",
            &format!("unknown {what} kind {kind:?}; expected one of {one_of}"),
        )));
    }
    Ok((kind, Value::Object(map)))
}

/// Removes `key` from a buffered table and reads it as `T` (`None` when absent); for
/// configurations that extend another by composition.
pub fn take<T: DeserializeOwned>(v: &mut Value, key: &str) -> Result<Option<T>, String> {
    let Some(x) = v.as_object_mut().and_then(|m| m.remove(key)) else {
        return Ok(None);
    };
    from_value(x).map(Some).map_err(|e| encode(key, &e))
}

/// Adds `extra` keys to the list in serde's "unknown field `x`, expected one of …"
/// message (for a table read as another's keys plus its own).
pub fn also_expected(message: &str, extra: &[&str]) -> String {
    let (path, msg) = decode(message);
    if !(msg.starts_with("unknown field") && msg.contains(", expected one of ")) {
        return message.to_string();
    }
    let more: Vec<String> = extra.iter().map(|k| format!(", `{k}`")).collect();
    encode(&path, &format!("{msg}{}", more.concat()))
}

/// A value as the user wrote it, for "found …" in messages.
fn found(v: &Value) -> String {
    match v {
        Value::Null => "nothing (null)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a table".into(),
    }
}

/// serde's wording for what was expected, in the user's words.
fn expected_words(exp: &str) -> String {
    let whole = |max: &str| format!("a whole number from 0 to {max}");
    match exp {
        "f64" | "f32" => "a number".into(),
        "u8" => whole("255"),
        "u16" => whole("65535"),
        "u32" => whole("4294967295"),
        "u64" | "usize" => whole("18446744073709551615"),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "a list [...]".into(),
        "a map" | "map" => "a table {...}".into(),
        e if e.starts_with("struct ") => "a table {...}".into(),
        e => e.to_string(),
    }
}

/// serde's wording for what was found, in the user's words.
fn found_words(unexp: &str) -> String {
    let strip = |s: &str, pre: &str| s.strip_prefix(pre).map(|r| r.trim_matches('`').to_string());
    if let Some(n) = strip(unexp, "floating point ").or_else(|| strip(unexp, "integer ")) {
        return n;
    }
    if let Some(b) = strip(unexp, "boolean ") {
        return b;
    }
    if let Some(s) = unexp.strip_prefix("string ") {
        return format!("the string {s}");
    }
    match unexp {
        "map" => "a table".into(),
        "sequence" => "a list".into(),
        "unit value" | "null" => "nothing (null)".into(),
        u => u.to_string(),
    }
}

/// Rewrites serde's standard messages ("invalid type: string \"x\", expected f64") as
/// "expected a number, found the string \"x\""; other messages are kept.
pub fn humane(msg: &str) -> String {
    for pre in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = msg.strip_prefix(pre) {
            if let Some((unexp, exp)) = rest.split_once(", expected ") {
                // serde_json appends " at line L column C"; keep it after the words.
                let (exp, pos) = match exp.find(" at line ") {
                    Some(i) => exp.split_at(i),
                    None => (exp, ""),
                };
                return format!(
                    "expected {}, found {}{pos}",
                    expected_words(exp),
                    found_words(unexp)
                );
            }
        }
    }
    if msg.starts_with("recursion limit exceeded") {
        return "the file is nested too deeply".into();
    }
    msg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_travel_through_messages_and_join() {
        let m = encode("dp1", &encode("max_p", "bad"));
        assert_eq!(decode(&m), ("dp1.max_p".into(), "bad".into()));
        assert_eq!(decode("plain"), (String::new(), "plain".into()));
        assert_eq!(join("stages", "[0].rate"), "stages[0].rate");
        assert_eq!(join("", "rate"), "rate");
        assert_eq!(encode("", "x"), "x");
    }

    #[test]
    fn serde_wording_becomes_the_users() {
        assert_eq!(
            humane("invalid type: string \"high\", expected f64"),
            "expected a number, found the string \"high\""
        );
        assert_eq!(
            humane("invalid value: integer `-1`, expected u64"),
            "expected a whole number from 0 to 18446744073709551615, found -1"
        );
        assert_eq!(
            humane("invalid type: floating point `1.5`, expected u32 at line 1 column 9"),
            "expected a whole number from 0 to 4294967295, found 1.5 at line 1 column 9"
        );
        assert_eq!(humane("missing field `a`"), "missing field `a`");
    }

    #[test]
    fn tagged_tables_name_the_kind_and_the_key() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        struct Red {
            #[allow(dead_code)]
            max_p: f64,
        }
        let read = |v: Value| -> Result<Red, String> {
            let (_, body) = tagged(v, "queue", &["red"]).map_err(|e| e.to_string())?;
            from_value::<Red>(body)
        };
        let e = read(serde_json::json!({"kind": "red", "max_p": "high"})).unwrap_err();
        assert_eq!(
            decode(&e),
            (
                "max_p".into(),
                "expected a number, found the string \"high\"".into()
            )
        );
        let e = read(serde_json::json!({"kind": "codel"})).unwrap_err();
        assert_eq!(decode(&e).0, "kind");
        assert!(e.contains("one of red"), "{e}");
        let e = read(serde_json::json!(5)).unwrap_err();
        assert!(e.contains("expected a queue table"), "{e}");
        let e = read(serde_json::json!({"max_p": 1})).unwrap_err();
        assert!(e.contains("missing `kind`"), "{e}");
    }
}
