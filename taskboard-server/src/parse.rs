//! Request bodies and query strings into the core's request types. A value
//! that does not fit is a 422 whose detail names the field (DECISIONS 1.2).

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use taskboard_core::{Error, Result};

use crate::http::Reject;

/// Reads a whole JSON body, refusing (413) more than `max` bytes and
/// dropping the connection of a client that takes too long to send it.
pub(crate) async fn read_body(
    body: Incoming,
    declared_len: Option<u64>,
    limits: &crate::Limits,
) -> Result<Bytes, Reject> {
    let too_large = || Error::too_large(format!("the request body exceeds {} bytes", limits.max_json_bytes));
    if declared_len.is_some_and(|n| n > limits.max_json_bytes as u64) {
        return Err(too_large().into());
    }
    let collect = Limited::new(body, limits.max_json_bytes).collect();
    match tokio::time::timeout(limits.body_read_timeout, collect).await {
        Err(_) => Err(Reject::Abort("the request body was not received in time")),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large().into()),
        Ok(Err(_)) => Err(Reject::Abort("the request body could not be read")),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// Parses a JSON body into `T`.
pub(crate) fn json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        json_error(&path, e.inner())
    })?;
    de.end().map_err(|e| json_error(".", &e))?;
    Ok(value)
}

fn json_error(path: &str, e: &serde_json::Error) -> Error {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = message.strip_suffix(suffix.as_str()).unwrap_or(&message);
    if e.is_syntax() || e.is_eof() {
        return Error::invalid("body", format!("malformed JSON: {message}"));
    }
    let root = path.is_empty() || path == ".";
    if let Some(missing) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
        let field = if root { missing.to_string() } else { format!("{path}.{missing}") };
        return Error::invalid(&field, "missing field");
    }
    Error::invalid(if root { "body" } else { path }, message)
}

/// How a query value is read for a field: query strings carry only text,
/// so fields that are numbers or booleans in the type are converted
/// before the type is deserialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    Text,
    Unsigned,
    Number,
    Boolean,
}

/// The kinds of the fields of a query type, read from its JSON Schema
/// (so flattened fields such as `limit` are included).
pub(crate) type QueryKinds = HashMap<String, FieldKind>;

pub(crate) fn query_kinds<T: JsonSchema>() -> QueryKinds {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut kinds = HashMap::new();
    if let Some(Value::Object(props)) = schema.as_value().get("properties") {
        for (name, prop) in props {
            kinds.insert(name.clone(), kind_of(prop));
        }
    }
    kinds
}

fn kind_of(schema: &Value) -> FieldKind {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"integer") {
        FieldKind::Unsigned
    } else if types.contains(&"number") {
        FieldKind::Number
    } else if types.contains(&"boolean") {
        FieldKind::Boolean
    } else {
        FieldKind::Text
    }
}

/// Parses a query string into `T`; `token` (credentials) is not part of
/// any query type and is skipped.
pub(crate) fn query<T: DeserializeOwned>(query: Option<&str>, kinds: &QueryKinds) -> Result<T> {
    let mut map = Map::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if key == "token" {
            continue;
        }
        let value = match kinds.get(key.as_ref()).copied().unwrap_or(FieldKind::Text) {
            FieldKind::Text => Value::String(value.into_owned()),
            FieldKind::Unsigned => Value::from(
                value
                    .parse::<u64>()
                    .map_err(|_| Error::invalid(&key, format!("{value:?} is not a non-negative integer")))?,
            ),
            FieldKind::Number => value
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| Error::invalid(&key, format!("{value:?} is not a number")))?,
            FieldKind::Boolean => match value.as_ref() {
                "true" | "1" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(Error::invalid(&key, format!("{value:?} is not true or false"))),
            },
        };
        map.insert(key.into_owned(), value);
    }
    serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        let root = path.is_empty() || path == ".";
        if let Some(missing) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            return Error::invalid(missing, "missing query parameter");
        }
        Error::invalid(if root { "query" } else { &path }, message)
    })
}

/// The credentials passed as `?token=`.
pub(crate) fn query_token(query: Option<&str>) -> Option<Cow<'_, str>> {
    form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v)
}

/// Parses a query of type `$t`, with its field kinds computed once.
macro_rules! parse_query {
    ($t:ty, $query:expr) => {{
        static KINDS: std::sync::OnceLock<$crate::parse::QueryKinds> = std::sync::OnceLock::new();
        $crate::parse::query::<$t>($query, KINDS.get_or_init($crate::parse::query_kinds::<$t>))
    }};
}
pub(crate) use parse_query;

#[cfg(test)]
mod tests {
    use super::*;
    use taskboard_core::ErrorKind;
    use taskboard_core::api::{MemberListQuery, NewTask, TaskFilter};
    use taskboard_core::model::TaskStatus;

    #[test]
    fn query_values_are_typed_from_the_schema() {
        let id = uuid::Uuid::now_v7();
        let q = format!("project_id={id}&status=todo&limit=5&token=secret");
        let f: TaskFilter = parse_query!(TaskFilter, Some(&q)).unwrap();
        assert_eq!(f.project_id, Some(id));
        assert_eq!(f.status, Some(TaskStatus::Todo));
        assert_eq!(f.page.limit, Some(5));
        let m: MemberListQuery = parse_query!(MemberListQuery, Some("include_inactive=true")).unwrap();
        assert!(m.include_inactive);
    }

    #[test]
    fn bad_query_values_name_the_field() {
        let e = parse_query!(TaskFilter, Some("project_id=nope")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Validation);
        assert!(e.detail().starts_with("project_id:"), "{}", e.detail());
        let e = parse_query!(TaskFilter, Some("limit=-1")).unwrap_err();
        assert!(e.detail().starts_with("limit:"), "{}", e.detail());
        let e = parse_query!(TaskFilter, Some("status=doing")).unwrap_err();
        assert!(e.detail().starts_with("status:"), "{}", e.detail());
    }

    #[test]
    fn bad_json_names_the_field() {
        let e = json::<NewTask>(br#"{"title": ""}"#).unwrap_err();
        assert_eq!(e.detail(), "title: must not be empty");
        let e = json::<NewTask>(br#"{}"#).unwrap_err();
        assert_eq!(e.detail(), "title: missing field");
        let e = json::<NewTask>(br#"{"title": "x", "priority": "huge"}"#).unwrap_err();
        assert!(e.detail().starts_with("priority: unknown variant"), "{}", e.detail());
        let e = json::<NewTask>(b"{").unwrap_err();
        assert!(e.detail().starts_with("body: malformed JSON"), "{}", e.detail());
    }
}
