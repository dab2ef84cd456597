//! The config file read as a JSON tree that keeps its keys in file order and refuses a key given
//! twice in one object: repositories run in the order the file lists them, and a second
//! `"timeout"` silently winning over the first would hide a mistake.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value, objects as ordered (key, value) pairs.
#[derive(Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// What kind of value this is, for messages (never the value itself: it may be a snippet).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

// Written by hand so a snippet held in the tree cannot reach a log through `{:?}`.
impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Json({})", self.kind())
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut pairs: Vec<(String, Json)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if pairs.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let value = map.next_value()?;
            pairs.push((key, value));
        }
        Ok(Json::Object(pairs))
    }
}

/// Parses `text` as one JSON document.
pub(crate) fn parse(text: &str) -> Result<Json, serde_json::Error> {
    serde_json::from_str(text)
}

/// The dotted key path (`hooks.timeout`, `repos.web.hooks`, `list.2`) of whatever sits at
/// `line` and `column` (1-based, as serde_json reports them) in `text`, read without parsing
/// it, so a document serde_json refuses (a number too large for a double, a key given twice,
/// a cut-off file) can still be located by key. `None` at the top level.
pub(crate) fn key_at(text: &str, line: usize, column: usize) -> Option<String> {
    enum Frame {
        Object {
            key: Option<String>,
            wants_key: bool,
        },
        Array(usize),
    }
    let offset = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + column.saturating_sub(1);
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() && i < offset {
        match bytes[i] {
            b'{' => stack.push(Frame::Object {
                key: None,
                wants_key: true,
            }),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object { wants_key, .. }) => *wants_key = true,
                None => {}
            },
            b':' => {
                if let Some(Frame::Object { wants_key, .. }) = stack.last_mut() {
                    *wants_key = false;
                }
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object {
                    key,
                    wants_key: true,
                }) = stack.last_mut()
                {
                    let raw = &bytes[start..i.min(bytes.len())];
                    *key = Some(String::from_utf8_lossy(raw).into_owned());
                }
            }
            _ => {}
        }
        i += 1;
    }
    let parts: Vec<String> = stack
        .iter()
        .filter_map(|f| match f {
            Frame::Object { key, .. } => key.clone(),
            Frame::Array(n) => Some(n.to_string()),
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_located_by_key_path() {
        let at = |text: &str| {
            let e = parse(text).unwrap_err();
            key_at(text, e.line(), e.column())
        };
        let huge = format!(
            "{{\"hooks\": {{\"scripts\": {{}},\n \"timeout\": 1{}}}}}",
            "0".repeat(400)
        );
        assert_eq!(at(&huge).as_deref(), Some("hooks.timeout"));
        assert_eq!(
            at(r#"{"repos": {"web": {"hooks": {"pre-create": {"bash": "a\"b", "bash": "c"}}}}}"#)
                .as_deref(),
            Some("repos.web.hooks.pre-create.bash")
        );
        assert_eq!(at(r#"{"a": [1, 2, {"b": tru}]}"#).as_deref(), Some("a.2.b"));
        assert_eq!(at("{} x"), None);
    }

    #[test]
    fn objects_keep_file_order_and_refuse_duplicates() {
        let j = parse(r#"{"b": 1, "a": {"z": null, "y": [true, "s"]}}"#).unwrap();
        let Json::Object(pairs) = j else { panic!() };
        assert_eq!(
            pairs.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        let e = parse(r#"{"a": 1, "a": 2}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key `a`"), "{e}");
        assert_eq!(
            format!("{:?}", Json::String("secret".into())),
            "Json(a string)"
        );
    }
}
