//! The kinds of a JSON body checked against the JSON Schema of its request
//! type before the type is read. serde's derived structs also accept a
//! JSON array (fields by position) and its enums a one-key object; the
//! schema says what the API accepts, so every body is held to it, at every
//! depth. The check streams over the text once and allocates only the
//! names of unknown fields, which it reports so a caller can name them.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A JSON value kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    fn article(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }

    fn of_type(name: &str) -> Option<Kind> {
        Some(match name {
            "null" => Kind::Null,
            "boolean" => Kind::Boolean,
            "number" | "integer" => Kind::Number,
            "string" => Kind::String,
            "array" => Kind::Array,
            "object" => Kind::Object,
            _ => return None,
        })
    }
}

/// Why a body does not fit: the path of the value and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub path: String,
    pub problem: String,
}

/// What the check found besides mismatches.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Object fields the schema does not know, by path.
    pub unknown: Vec<String>,
}

/// Why a body was refused.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Not JSON at all.
    Syntax(serde_json::Error),
    /// JSON, with a value of a kind the schema does not allow.
    Shape(Mismatch),
}

/// Checks that `text` is one JSON value whose every part has a kind the
/// schema allows at its place.
pub(crate) fn check(text: &str, root: &Value) -> Result<Checked, Refused> {
    let mut state = State { defs: defs(root), found: None, checked: Checked::default() };
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Check { schema: Some(root), path: String::new(), state: &mut state };
    let result = seed.deserialize(&mut de).and_then(|()| de.end());
    match (result, state.found.take()) {
        (Ok(()), _) => Ok(state.checked),
        (Err(_), Some(mismatch)) => Err(Refused::Shape(mismatch)),
        (Err(e), None) => Err(Refused::Syntax(e)),
    }
}

fn defs(root: &Value) -> Option<&Map<String, Value>> {
    root.get("$defs").and_then(Value::as_object)
}

struct State<'s> {
    defs: Option<&'s Map<String, Value>>,
    found: Option<Mismatch>,
    checked: Checked,
}

impl<'s> State<'s> {
    /// The schema a `$ref` points at, or the schema itself.
    fn resolve(&self, schema: &'s Value) -> &'s Value {
        let mut schema = schema;
        for _ in 0..16 {
            match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
                Some(name) => match self.defs.and_then(|d| d.get(name)) {
                    Some(target) => schema = target,
                    None => break,
                },
                None => break,
            }
        }
        schema
    }

    /// The alternatives a schema offers (itself, or the branches of its
    /// `anyOf`/`oneOf`/`allOf`), resolved.
    fn alternatives(&self, schema: &'s Value, out: &mut Vec<&'s Value>) {
        let schema = self.resolve(schema);
        let mut branched = false;
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(branches) = schema.get(key).and_then(Value::as_array) {
                branched = true;
                for b in branches {
                    self.alternatives(b, out);
                }
            }
        }
        if !branched || schema.get("type").is_some() || schema.get("properties").is_some() {
            out.push(schema);
        }
    }

    /// The kinds a schema allows; `None` when it does not say (anything
    /// goes).
    fn kinds(&self, schema: &'s Value) -> Option<Vec<Kind>> {
        let mut alts = Vec::new();
        self.alternatives(schema, &mut alts);
        let mut kinds = Vec::new();
        for alt in alts {
            match alt.get("type") {
                Some(Value::String(t)) => kinds.extend(Kind::of_type(t)),
                Some(Value::Array(ts)) => {
                    kinds.extend(ts.iter().filter_map(Value::as_str).filter_map(Kind::of_type))
                }
                _ if alt.get("properties").is_some() => kinds.push(Kind::Object),
                _ => return None,
            }
        }
        Some(kinds)
    }

    /// The schema of field `name` in an object schema; `None` for a
    /// field the schema does not know, `Some(None)` for one it does not
    /// describe.
    fn field(&self, schema: &'s Value, name: &str) -> Option<Option<&'s Value>> {
        let mut alts = Vec::new();
        self.alternatives(schema, &mut alts);
        let mut open = false;
        for alt in alts {
            if let Some(prop) = alt.get("properties").and_then(|p| p.get(name)) {
                return Some(Some(prop));
            }
            match alt.get("additionalProperties") {
                Some(Value::Bool(false)) | None => {}
                Some(Value::Bool(true)) => open = true,
                Some(extra) => return Some(Some(extra)),
            }
            if alt.get("type").is_none() && alt.get("properties").is_none() {
                open = true;
            }
        }
        open.then_some(None)
    }

    /// The schema of the items of an array schema.
    fn items(&self, schema: &'s Value) -> Option<&'s Value> {
        let mut alts = Vec::new();
        self.alternatives(schema, &mut alts);
        alts.into_iter().find_map(|alt| alt.get("items").filter(|i| i.is_object()))
    }
}

fn describe(kinds: &[Kind]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for k in kinds {
        if !names.contains(&k.article()) {
            names.push(k.article());
        }
    }
    match names.as_slice() {
        [] => "nothing".into(),
        [one] => (*one).into(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// One value to check against `schema` (`None`: no constraint).
struct Check<'a, 's> {
    schema: Option<&'s Value>,
    path: String,
    state: &'a mut State<'s>,
}

impl Check<'_, '_> {
    fn path(&self) -> String {
        if self.path.is_empty() { "body".into() } else { self.path.clone() }
    }

    fn child(&self, name: &str) -> String {
        if self.path.is_empty() { name.to_string() } else { format!("{}.{name}", self.path) }
    }

    /// Refuses `got` if the schema does not allow it.
    fn kind<E: serde::de::Error>(&mut self, got: Kind) -> Result<(), E> {
        let Some(schema) = self.schema else { return Ok(()) };
        match self.state.kinds(schema) {
            Some(allowed) if !allowed.contains(&got) => {
                let m = Mismatch {
                    path: self.path(),
                    problem: format!("expected {}, got {}", describe(&allowed), got.article()),
                };
                let message = format!("{}: {}", m.path, m.problem);
                self.state.found = Some(m);
                Err(E::custom(message))
            }
            _ => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Check<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.kind(Kind::Null)
    }
    fn visit_none<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.kind(Kind::Null)
    }
    fn visit_bool<E: serde::de::Error>(mut self, _: bool) -> Result<(), E> {
        self.kind(Kind::Boolean)
    }
    fn visit_i64<E: serde::de::Error>(mut self, _: i64) -> Result<(), E> {
        self.kind(Kind::Number)
    }
    fn visit_u64<E: serde::de::Error>(mut self, _: u64) -> Result<(), E> {
        self.kind(Kind::Number)
    }
    fn visit_f64<E: serde::de::Error>(mut self, _: f64) -> Result<(), E> {
        self.kind(Kind::Number)
    }
    fn visit_str<E: serde::de::Error>(mut self, _: &str) -> Result<(), E> {
        self.kind(Kind::String)
    }
    fn visit_borrowed_str<E: serde::de::Error>(mut self, _: &'de str) -> Result<(), E> {
        self.kind(Kind::String)
    }
    fn visit_string<E: serde::de::Error>(mut self, _: String) -> Result<(), E> {
        self.kind(Kind::String)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.kind(Kind::Array)?;
        let items = self.schema.and_then(|s| self.state.items(s));
        let mut i = 0usize;
        loop {
            let path = format!("{}[{i}]", self.path);
            let seed = Check { schema: items, path, state: &mut *self.state };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.kind(Kind::Object)?;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let path = self.child(&key);
            match self.schema.map(|s| self.state.field(s, &key)) {
                // A field the schema does not know: skipped, and named.
                Some(None) => {
                    self.state.checked.unknown.push(path);
                    map.next_value::<IgnoredAny>()?;
                }
                Some(Some(field)) => {
                    map.next_value_seed(Check { schema: field, path, state: &mut *self.state })?;
                }
                None => {
                    map.next_value_seed(Check { schema: None, path, state: &mut *self.state })?;
                }
            }
        }
        Ok(())
    }
}
