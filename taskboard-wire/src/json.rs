//! JSON bodies into request types: a value that does not fit is a 422
//! whose detail names the field.

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// Parses a JSON body into `T`.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        error(&path, e.inner())
    })?;
    de.end().map_err(|e| error(".", &e))?;
    Ok(value)
}

/// A serde error as a 422 naming the field at `path`.
pub fn error(path: &str, e: &serde_json::Error) -> Error {
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

#[cfg(test)]
mod tests {
    use super::from_slice;
    use crate::NewTask;

    #[test]
    fn bad_json_names_the_field() {
        let e = from_slice::<NewTask>(br#"{"title": ""}"#).unwrap_err();
        assert_eq!(e.detail(), "title: must not be empty");
        let e = from_slice::<NewTask>(br#"{}"#).unwrap_err();
        assert_eq!(e.detail(), "title: missing field");
        let e = from_slice::<NewTask>(br#"{"title": "x", "priority": "huge"}"#).unwrap_err();
        assert!(e.detail().starts_with("priority: unknown variant"), "{}", e.detail());
        let e = from_slice::<NewTask>(b"{").unwrap_err();
        assert!(e.detail().starts_with("body: malformed JSON"), "{}", e.detail());
    }
}
