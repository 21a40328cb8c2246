//! Request bodies and query strings into the core's request types. A value
//! that does not fit is a 422 whose detail names the field (docs/rules.md, requests and errors).

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
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

pub(crate) fn kinds_of(schema: &schemars::Schema) -> QueryKinds {
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

/// A query string as a JSON object whose values are typed by `kinds`;
/// `token` (credentials) is not part of any query type and is skipped.
pub(crate) fn query(query: Option<&str>, kinds: &QueryKinds) -> Result<Value> {
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
    Ok(Value::Object(map))
}

/// The credentials passed as `?token=`.
pub(crate) fn query_token(query: Option<&str>) -> Option<Cow<'_, str>> {
    form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskboard_core::ErrorKind;
    use taskboard_core::api::{MemberListQuery, QueryParams, TaskFilter};
    use taskboard_core::model::TaskStatus;

    fn parsed<T: QueryParams>(q: &str) -> Result<T> {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let kinds = T::schema(&mut generator).map(|s| kinds_of(&s)).unwrap_or_default();
        T::from_json(query(Some(q), &kinds)?)
    }

    #[test]
    fn query_values_are_typed_from_the_schema() {
        let id = uuid::Uuid::now_v7();
        let q = format!("project_id={id}&status=todo&limit=5&token=secret");
        let f: TaskFilter = parsed(&q).unwrap();
        assert_eq!(f.project_id, Some(id));
        assert_eq!(f.status, Some(TaskStatus::Todo));
        assert_eq!(f.page.limit, Some(5));
        let m: MemberListQuery = parsed("include_inactive=true").unwrap();
        assert!(m.include_inactive);
    }

    #[test]
    fn bad_query_values_name_the_field() {
        let e = parsed::<TaskFilter>("project_id=nope").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Validation);
        assert!(e.detail().starts_with("project_id:"), "{}", e.detail());
        let e = parsed::<TaskFilter>("limit=-1").unwrap_err();
        assert!(e.detail().starts_with("limit:"), "{}", e.detail());
        let e = parsed::<TaskFilter>("status=doing").unwrap_err();
        assert!(e.detail().starts_with("status:"), "{}", e.detail());
    }
}
