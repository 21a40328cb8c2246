//! How a request's query and body are read and written: the query as a
//! JSON object checked against its type, the body as JSON, as an upload,
//! or as nothing. The endpoint declarations of `taskboard_core::api` name
//! these traits for their inputs; the typed HTTP client encodes with
//! them and the server decodes with them.

use bytes::Bytes;
use schemars::{Schema, SchemaGenerator};

use crate::error::{Error, Result};
use crate::{Upload, Wire, schema_of};

// ---- query -------------------------------------------------------------------

/// A query string type.
pub trait QueryParams: Send + Sync + 'static + Sized {
    /// The JSON Schema of the query as an object, `None` for no query.
    fn schema(g: &mut SchemaGenerator) -> Option<Schema>;
    /// From the query as a JSON object (values typed by the schema).
    fn from_json(value: serde_json::Value) -> Result<Self>;
    /// The query's fields, for a URL.
    fn to_json(&self) -> Result<serde_json::Value>;
}

impl QueryParams for () {
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn from_json(value: serde_json::Value) -> Result<()> {
        match value {
            serde_json::Value::Object(map) if !map.is_empty() => {
                let names: Vec<String> = map.keys().cloned().collect();
                Err(crate::fields::unknown("query parameter", &names, &[]))
            }
            _ => Ok(()),
        }
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Object(Default::default()))
    }
}

impl<T: Wire> QueryParams for T {
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        });
        Some(settings.into_generator().into_root_schema_for::<T>())
    }
    fn from_json(value: serde_json::Value) -> Result<T> {
        if let serde_json::Value::Object(map) = &value {
            let known = crate::fields::known::<T>();
            let names: Vec<String> = map.keys().filter(|k| !known.contains(k)).cloned().collect();
            if !names.is_empty() {
                return Err(crate::fields::unknown("query parameter", &names, &known));
            }
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            if let Some(missing) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
                return Error::invalid(missing, "missing query parameter");
            }
            Error::invalid(if path == "." { "query" } else { &path }, message)
        })
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        serde_json::to_value(self).map_err(Error::internal)
    }
}

// ---- bodies ------------------------------------------------------------------

/// What an endpoint takes as its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    None,
    Json,
    Multipart,
}

/// A body as it travels.
pub enum RawBody {
    None,
    Json(Bytes),
    Upload(Upload),
}

/// A request body type.
pub trait RequestBody: Send + 'static + Sized {
    const KIND: BodyKind;
    /// Whether the body may be left out.
    const OPTIONAL: bool = false;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema>;
    fn decode(raw: RawBody) -> Result<Self>;
    fn encode(self) -> Result<RawBody>;
    /// The top-level fields of a JSON object body: those the type does
    /// not know, and those it knows.
    fn fields(raw: &RawBody) -> (Vec<String>, Vec<String>) {
        let _ = raw;
        (Vec::new(), Vec::new())
    }
    /// Every field the type knows.
    fn known_fields() -> std::sync::Arc<[String]> {
        std::sync::Arc::new([])
    }
    /// The body as JSON, for the fields that name a project
    /// (`scopes::permit`); `None` for no JSON body.
    fn json_view(&self) -> Option<serde_json::Value> {
        None
    }
    /// The JSON Schema of a JSON body as a document of its own, with its
    /// definitions.
    fn root_schema() -> Option<Schema> {
        None
    }
}

impl RequestBody for () {
    const KIND: BodyKind = BodyKind::None;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn decode(_: RawBody) -> Result<()> {
        Ok(())
    }
    fn encode(self) -> Result<RawBody> {
        Ok(RawBody::None)
    }
}

impl<T: Wire> RequestBody for T {
    const KIND: BodyKind = BodyKind::Json;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(schema_of::<T>(g))
    }
    fn decode(raw: RawBody) -> Result<T> {
        match raw {
            RawBody::Json(bytes) => crate::json::from_slice(&bytes),
            _ => Err(Error::invalid("body", "a JSON body is required")),
        }
    }
    fn encode(self) -> Result<RawBody> {
        serde_json::to_vec(&self).map(|v| RawBody::Json(v.into())).map_err(Error::internal)
    }
    fn fields(raw: &RawBody) -> (Vec<String>, Vec<String>) {
        let RawBody::Json(bytes) = raw else { return (Vec::new(), Vec::new()) };
        type Fields = std::collections::BTreeMap<String, serde::de::IgnoredAny>;
        let Ok(map) = serde_json::from_slice::<Fields>(bytes) else {
            return (Vec::new(), Vec::new());
        };
        let known = crate::fields::known::<T>();
        map.into_keys().partition(|k| !known.contains(k))
    }
    fn known_fields() -> std::sync::Arc<[String]> {
        crate::fields::known::<T>()
    }
    fn json_view(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
    fn root_schema() -> Option<Schema> {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.meta_schema = None);
        Some(settings.into_generator().into_root_schema_for::<T>())
    }
}

/// A JSON body that may be left out: an absent or empty body is `None`.
#[derive(Debug, Clone, Default)]
pub struct Optional<T>(pub Option<T>);

impl<T: Wire> RequestBody for Optional<T> {
    const KIND: BodyKind = BodyKind::Json;
    const OPTIONAL: bool = true;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(schema_of::<T>(g))
    }
    fn decode(raw: RawBody) -> Result<Optional<T>> {
        match raw {
            RawBody::Json(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Optional(None)),
            RawBody::None => Ok(Optional(None)),
            raw => <T as RequestBody>::decode(raw).map(|t| Optional(Some(t))),
        }
    }
    fn encode(self) -> Result<RawBody> {
        match self.0 {
            Some(t) => RequestBody::encode(t),
            None => Ok(RawBody::None),
        }
    }
    fn fields(raw: &RawBody) -> (Vec<String>, Vec<String>) {
        <T as RequestBody>::fields(raw)
    }
    fn known_fields() -> std::sync::Arc<[String]> {
        <T as RequestBody>::known_fields()
    }
    fn json_view(&self) -> Option<serde_json::Value> {
        self.0.as_ref().and_then(RequestBody::json_view)
    }
    /// The schema a body that is there must fit.
    fn root_schema() -> Option<Schema> {
        <T as RequestBody>::root_schema()
    }
}

impl RequestBody for Upload {
    const KIND: BodyKind = BodyKind::Multipart;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn decode(raw: RawBody) -> Result<Upload> {
        match raw {
            RawBody::Upload(u) => Ok(u),
            _ => Err(Error::invalid("body", "expected multipart/form-data with a file part")),
        }
    }
    fn encode(self) -> Result<RawBody> {
        Ok(RawBody::Upload(self))
    }
}
