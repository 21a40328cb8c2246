//! Request bodies and query strings into the core's request types. A value
//! that does not fit is a 422 whose detail names the field.

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap};
use serde_json::{Map, Value};
use taskboard_core::{Error, Result};

use crate::response::Reject;
use crate::shape;

/// Reads a whole JSON body, refusing (413) more than `max` bytes and
/// dropping the connection of a client that takes too long to send it.
pub(crate) async fn read_body(
    body: Incoming,
    declared_len: Option<u64>,
    max: usize,
    limits: &crate::Limits,
) -> Result<Bytes, Reject> {
    let too_large = || Error::too_large(format!("the request body exceeds {max} bytes"));
    if declared_len.is_some_and(|n| n > max as u64) {
        return Err(too_large().into());
    }
    let collect = Limited::new(body, max).collect();
    match tokio::time::timeout(limits.body_read_timeout, collect).await {
        Err(_) => Err(Reject::Abort("the request body was not received in time")),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large().into()),
        Ok(Err(_)) => Err(Reject::Abort("the request body could not be read")),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// Checks a JSON body before its type reads it: UTF-8 throughout (unknown
/// fields included, which serde would skip unread), and every value of a
/// kind the schema allows where it stands: an array is not an object, a
/// one-key object is not an enum value.
pub(crate) fn check_json(bytes: &[u8], schema: &Value) -> Result<()> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::invalid("body", format!("not valid UTF-8 (at byte {})", e.valid_up_to())))?;
    match shape::check(text, schema) {
        Ok(_) => Ok(()),
        Err(shape::Refused::Syntax(e)) => Err(taskboard_core::api::json::error(".", &e)),
        Err(shape::Refused::Shape(m)) => Err(Error::invalid(&m.path, m.problem)),
    }
}

/// Whether a `Content-Type` names JSON: `application/json` or a `+json`
/// type, with no charset but UTF-8. No `Content-Type` at all is read as
/// JSON.
pub(crate) fn check_json_type(headers: &HeaderMap) -> Result<()> {
    let Some(value) = single_content_type(headers)? else { return Ok(()) };
    let (essence, params) = split_media_type(value);
    let json = essence == "application/json"
        || essence
            .split_once('/')
            .is_some_and(|(t, sub)| !t.is_empty() && sub.len() > 5 && sub.ends_with("+json"));
    if !json {
        return Err(Error::unsupported_media_type(format!(
            "content-type: this endpoint reads application/json, got {value:?}"
        )));
    }
    for (name, v) in params {
        if name == "charset" && !v.eq_ignore_ascii_case("utf-8") && !v.eq_ignore_ascii_case("utf8") {
            return Err(Error::unsupported_media_type(format!(
                "content-type: JSON is read as UTF-8 only, got charset={v}"
            )));
        }
    }
    Ok(())
}

/// The multipart boundary of a `multipart/form-data` body. Another media
/// type is a 415; a multipart type without a usable boundary is a
/// malformed body (422).
pub(crate) fn multipart_boundary(headers: &HeaderMap) -> Result<String> {
    let value = single_content_type(headers)?.unwrap_or("");
    let (essence, params) = split_media_type(value);
    if essence != "multipart/form-data" {
        return Err(Error::unsupported_media_type(format!(
            "content-type: this endpoint reads multipart/form-data, got {value:?}"
        )));
    }
    let boundary = params.into_iter().find(|(name, _)| name == "boundary").map(|(_, v)| v);
    match boundary {
        None => Err(Error::invalid("content-type", "the multipart boundary is missing")),
        Some(b) if b.is_empty() || b.len() > 70 || b.ends_with(' ') || !b.bytes().all(boundary_char) => {
            Err(Error::invalid("content-type", format!("{b:?} is not a valid multipart boundary")))
        }
        Some(b) => Ok(b),
    }
}

/// Characters of a multipart boundary (RFC 2046 `bchars`).
fn boundary_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"'()+_,-./:=? ".contains(&c)
}

/// The one `Content-Type` of a request, as text.
fn single_content_type(headers: &HeaderMap) -> Result<Option<&str>> {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    let Some(first) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(Error::unsupported_media_type("content-type: given more than once"));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| Error::unsupported_media_type("content-type: not a valid media type"))
}

/// A media type as its lower-case `type/subtype` and its parameters
/// (names lower-case, values unquoted).
fn split_media_type(value: &str) -> (String, Vec<(String, String)>) {
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let params = parts
        .filter_map(|p| {
            let (name, v) = p.split_once('=')?;
            let v = v.trim();
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            Some((name.trim().to_ascii_lowercase(), v.to_string()))
        })
        .collect();
    (essence, params)
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

/// How a query parameter is read: its kind, and whether it is a list
/// (given once per element) or a single value (given at most once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    pub kind: FieldKind,
    pub list: bool,
}

/// The fields of a query type, read from its JSON Schema (so flattened
/// fields such as `limit` are included).
pub(crate) type QueryKinds = HashMap<String, Field>;

pub(crate) fn kinds_of(schema: &schemars::Schema) -> QueryKinds {
    let mut kinds = HashMap::new();
    if let Some(Value::Object(props)) = schema.as_value().get("properties") {
        for (name, prop) in props {
            let list = types_of(prop).contains(&"array");
            let kind = if list { prop.get("items").map_or(FieldKind::Text, kind_of) } else { kind_of(prop) };
            kinds.insert(name.clone(), Field { kind, list });
        }
    }
    kinds
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn kind_of(schema: &Value) -> FieldKind {
    let types = types_of(schema);
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

/// A query value as the JSON value its field kind wants.
fn query_value(key: &str, value: &str, kind: FieldKind) -> Result<Value> {
    Ok(match kind {
        FieldKind::Text => Value::String(value.to_string()),
        FieldKind::Unsigned => Value::from(
            value
                .parse::<u64>()
                .map_err(|_| Error::invalid(key, format!("{value:?} is not a non-negative integer")))?,
        ),
        FieldKind::Number => value
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| Error::invalid(key, format!("{value:?} is not a number")))?,
        FieldKind::Boolean => Value::Bool(parse_bool(value).ok_or_else(|| {
            Error::invalid(key, format!("{value:?} is not a boolean (true/false, 1/0, yes/no)"))
        })?),
    })
}

/// A boolean query value: `true`/`false`, `1`/`0` or `yes`/`no`, in any
/// case.
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    const TRUE: [&str; 3] = ["true", "1", "yes"];
    const FALSE: [&str; 3] = ["false", "0", "no"];
    if TRUE.iter().any(|t| value.eq_ignore_ascii_case(t)) {
        Some(true)
    } else if FALSE.iter().any(|f| value.eq_ignore_ascii_case(f)) {
        Some(false)
    } else {
        None
    }
}

/// Parses a query string into `T`; `token` (credentials) is not part of
/// any query type and is skipped. A parameter given twice is refused
/// unless it is a list.
/// A query string as a JSON object whose values are typed by `kinds`;
/// `token` (credentials) is not part of any query type and is skipped.
pub(crate) fn query(query: Option<&str>, kinds: &QueryKinds) -> Result<Value> {
    let mut map = Map::new();
    let mut token_seen = false;
    for pair in pairs(query.unwrap_or("")) {
        let (key, value) = pair?;
        if key == "token" {
            if std::mem::replace(&mut token_seen, true) {
                return Err(Error::invalid("token", "given more than once"));
            }
            continue;
        }
        let field = kinds.get(&key).copied().unwrap_or(Field { kind: FieldKind::Text, list: false });
        let value = query_value(&key, &value, field.kind)?;
        if field.list {
            if let Value::Array(items) = map.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
                items.push(value);
            }
        } else if map.contains_key(&key) {
            return Err(Error::invalid(&key, "given more than once; it takes one value"));
        } else {
            map.insert(key, value);
        }
    }
    Ok(Value::Object(map))
}

/// The `name=value` pairs of a query string, decoded (`+` is a space,
/// `%XX` a byte). A name or value that does not decode to UTF-8 is refused
/// rather than read with replacement characters.
fn pairs(query: &str) -> impl Iterator<Item = Result<(String, String)>> + '_ {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode_component(name)
            .map_err(|_| Error::invalid("query", "a parameter name is not valid UTF-8"))?;
        let value = decode_component(value).map_err(|_| Error::invalid(&name, "not valid UTF-8"))?;
        Ok((name, value))
    })
}

fn decode_component(text: &str) -> std::result::Result<String, std::str::Utf8Error> {
    let plus_as_space = text.replace('+', " ");
    percent_encoding::percent_decode_str(&plus_as_space).decode_utf8().map(Cow::into_owned)
}

/// The credentials passed as `?token=`; given twice, they are refused.
pub(crate) fn query_token(query: Option<&str>) -> Result<Option<Cow<'_, str>>> {
    let Some(query) = query else { return Ok(None) };
    let mut tokens = form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k == "token").map(|(_, v)| v);
    let first = tokens.next();
    if tokens.next().is_some() {
        return Err(Error::invalid("token", "given more than once"));
    }
    Ok(first)
}

/// The value of the cookie `name` among the request's `Cookie` headers
/// (the first, when it comes more than once), for the one endpoint that
/// declares it.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim().trim_matches('"').to_string())
        .filter(|value| !value.is_empty())
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
    fn a_cookie_is_found_by_its_name_among_the_others() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, "a=1; taskboard_sso=xyz ;b=2".parse().unwrap());
        h.append(header::COOKIE, "taskboard_sso=later".parse().unwrap());
        assert_eq!(cookie(&h, "taskboard_sso").as_deref(), Some("xyz"));
        assert_eq!(cookie(&h, "b").as_deref(), Some("2"));
        assert_eq!(cookie(&h, "taskboard"), None);
        assert_eq!(cookie(&HeaderMap::new(), "a"), None);
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

/// The value of a conditional header (`If-Match`, `If-None-Match`): `*` or
/// a comma-separated list of entity tags (RFC 9110, 8.8.3 and 13.1.1);
/// anything else is 400, so a mangled condition is never taken for none.
pub(crate) fn entity_tags(headers: &HeaderMap, name: hyper::header::HeaderName) -> Result<Option<String>> {
    let Some(value) = headers.get(&name) else { return Ok(None) };
    let bytes = value.as_bytes();
    if !is_entity_tag_list(bytes) {
        let shown = if name == header::IF_MATCH { "If-Match" } else { "If-None-Match" };
        return Err(Error::bad_request(format!(
            "{shown} must be * or a list of entity tags such as \"abc\" or W/\"abc\""
        )));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

fn is_entity_tag_list(bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    if trimmed == b"*" {
        return true;
    }
    let mut any = false;
    for item in trimmed.split(|&b| b == b',') {
        let item = item.trim_ascii();
        if item.is_empty() {
            // Empty list elements are allowed (RFC 9110, 5.6.1).
            continue;
        }
        let opaque = item.strip_prefix(b"W/").unwrap_or(item);
        let valid = opaque.len() >= 2
            && opaque[0] == b'"'
            && opaque[opaque.len() - 1] == b'"'
            && opaque[1..opaque.len() - 1]
                .iter()
                .all(|&c| c == 0x21 || (0x23..=0x7e).contains(&c) || c >= 0x80);
        if !valid {
            return false;
        }
        any = true;
    }
    any
}

/// The lease a request presents (`Taskboard-Lease: <lease id>`); 400 when
/// it is not a lease id.
pub(crate) fn lease(headers: &HeaderMap) -> Result<Option<uuid::Uuid>> {
    let Some(value) = headers.get(LEASE) else { return Ok(None) };
    value.to_str().ok().and_then(|v| v.trim().parse().ok()).map(Some).ok_or_else(|| {
        Error::bad_request("Taskboard-Lease must be a lease id (the uuid of the Task's lease.id)")
    })
}

/// The request header naming the lease its sender holds.
pub(crate) const LEASE: hyper::header::HeaderName = hyper::header::HeaderName::from_static("taskboard-lease");

#[cfg(test)]
mod entity_tag_tests {
    use super::is_entity_tag_list;

    #[test]
    fn entity_tag_lists() {
        for ok in [&b"*"[..], b"\"a\"", b"W/\"a\"", b"\"a\", W/\"b\"", b" \"\" ", b"\"a\",,\"b\""] {
            assert!(is_entity_tag_list(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [&b""[..], b"\xc3\xa9", b"abc", b"\"a", b"W/a", b"\"a\"b", b"\"a b\"", b"*, \"a\"", b","] {
            assert!(!is_entity_tag_list(bad), "{}", String::from_utf8_lossy(bad));
        }
    }
}
