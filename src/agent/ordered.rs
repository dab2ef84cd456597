//! JSON read with each object's members in the order they are written. serde_json's `Map`
//! sorts its keys, so a hook file read into a `Value` would be walked event by event in
//! alphabetical order; read through [`parse`], the warnings and import's notes follow the file a
//! person has open.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A JSON value whose objects keep their members' order. A list's items are plain [`Value`]s:
/// only the objects down to the first list are walked in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ordered {
    /// An object's members as written; a key written twice keeps its first place and its last
    /// value, as serde_json keeps the last.
    Object(Vec<(String, Ordered)>),
    /// Anything else.
    Other(Value),
}

/// Parses `text`, skipping a UTF-8 byte order mark ahead of it: not JSON, but some Windows
/// editors save one.
pub(crate) fn parse(text: &str) -> serde_json::Result<Ordered> {
    serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text))
}

impl Ordered {
    /// The value of member `key`, if this is an object that has one.
    pub(crate) fn get(&self, key: &str) -> Option<&Ordered> {
        match self {
            Ordered::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            Ordered::Other(_) => None,
        }
    }

    /// An object's keys in order; none for anything else.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        let members = match self {
            Ordered::Object(members) => members.as_slice(),
            Ordered::Other(_) => &[],
        };
        members.iter().map(|(k, _)| k.as_str())
    }

    /// The same value with serde_json's (sorted) objects.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Ordered::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect::<Map<_, _>>(),
            ),
            Ordered::Other(v) => v.clone(),
        }
    }

    /// An object's members with serde_json values, in order; `None` for anything else.
    pub(crate) fn members(&self) -> Option<Vec<(String, Value)>> {
        match self {
            Ordered::Object(members) => Some(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
            Ordered::Other(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
        Ok(Ordered::Other(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
        Ok(Ordered::Other(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
        Ok(Ordered::Other(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
        Ok(Ordered::Other(v.into()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
        Ok(Ordered::Other(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Ordered, E> {
        Ok(Ordered::Other(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Other(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Other(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Ordered::Other(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut members: Vec<(String, Ordered)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some((_, earlier)) => *earlier = value,
                None => members.push((key, value)),
            }
        }
        Ok(Ordered::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_keep_the_order_written_and_values_are_unchanged() {
        let text = r#"{"z": {"b": 1, "a": [{"y": 2, "x": 1.5}]}, "a": null, "m": "s", "z2": true}"#;
        let parsed = parse(text).unwrap();
        let keys: Vec<String> = parsed.members().unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["z", "a", "m", "z2"]);
        let inner: Vec<String> = match parsed.get("z").unwrap() {
            Ordered::Object(m) => m.iter().map(|(k, _)| k.clone()).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(inner, ["b", "a"]);
        assert_eq!(
            parsed.to_value(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn a_key_written_twice_keeps_its_first_place_and_last_value() {
        let parsed = parse(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
        assert_eq!(
            parsed.members().unwrap(),
            [("a".to_owned(), json!(3)), ("b".to_owned(), json!(2))]
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_only_there() {
        assert_eq!(
            parse("\u{feff}[1]").unwrap(),
            Ordered::Other(json!([1]))
        );
        assert!(parse("[1]\u{feff}").is_err());
        assert!(parse("\u{feff}\u{feff}[1]").is_err());
        assert!(parse("{\"a\": ").is_err());
    }
}
