//! A small JSON Schema checker for the subset `fixtures/lifecycle/*.schema.json` uses: `type`
//! (one or a list), `enum`, `required`, `properties`, `additionalProperties: false`, `items`,
//! `minimum` and local `$ref`s. Driven by the schema file, so the file is what is tested.

use serde_json::Value;

/// The errors of `value` against `schema` (empty: valid).
pub fn check(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    walk(schema, schema, value, "$", &mut errors);
    errors
}

/// Panics unless `value` is valid against the schema file `name` in `fixtures/lifecycle/`.
pub fn assert_valid(name: &str, value: &Value) {
    let text = std::fs::read_to_string(super::lifecycle::fixtures().join(name)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let errors = check(&schema, value);
    assert!(errors.is_empty(), "{name}: {errors:#?}\nvalue: {value:#}");
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

fn walk(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix("#/")
            .unwrap_or_else(|| panic!("only local refs: {r}"))
            .split('/')
            .fold(root, |node, key| &node[key]);
        return walk(root, target, v, at, errors);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""), v)),
            _ => true,
        };
        if !ok {
            errors.push(format!("{at}: {v} is not of type {t}"));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.contains(v)
    {
        errors.push(format!("{at}: {v} is not one of {options:?}"));
    }
    if let (Some(min), Some(n)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64())
        && n < min
    {
        errors.push(format!("{at}: {n} < {min}"));
    }
    if let Value::Object(obj) = v {
        if let Some(Value::Array(req)) = s.get("required") {
            for k in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(k) {
                    errors.push(format!("{at}: missing {k}"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, child) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => walk(root, ps, child, &format!("{at}.{k}"), errors),
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: unexpected key {k}"));
                }
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(is)) = (v, s.get("items")) {
        for (i, item) in items.iter().enumerate() {
            walk(root, is, item, &format!("{at}[{i}]"), errors);
        }
    }
}
