//! A typo never passes silently: the known fields of a request type, read
//! from its JSON Schema, and the errors that name an unknown field with
//! the nearest known one.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use schemars::JsonSchema;

use crate::error::Error;

/// The top-level field names of `T` (flattened fields included), computed
/// once per type.
pub fn known<T: JsonSchema + 'static>() -> Arc<[String]> {
    static KNOWN: OnceLock<RwLock<HashMap<TypeId, Arc<[String]>>>> = OnceLock::new();
    let cache = KNOWN.get_or_init(Default::default);
    if let Some(names) = cache.read().unwrap().get(&TypeId::of::<T>()) {
        return names.clone();
    }
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let names: Arc<[String]> = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    cache.write().unwrap().insert(TypeId::of::<T>(), names.clone());
    names
}

/// The known name closest to `name`, when it is close enough to be what
/// was meant.
pub fn nearest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// `stauts: unknown field; did you mean status?` for the first unknown
/// name, listing the others.
pub fn unknown(what: &str, names: &[String], known: &[String]) -> Error {
    let first = &names[0];
    let mut detail = format!("unknown {what}");
    match nearest(first, known) {
        Some(k) => detail.push_str(&format!("; did you mean {k}?")),
        None if known.is_empty() => detail.push_str("; this endpoint takes none"),
        None => detail.push_str(&format!("; known: {}", known.join(", "))),
    }
    if names.len() > 1 {
        detail.push_str(&format!(" (also unknown: {})", names[1..].join(", ")));
    }
    Error::invalid(first, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TaskFilter, TaskPatch};

    #[test]
    fn flattened_fields_are_known() {
        let k = known::<TaskFilter>();
        assert!(k.iter().any(|n| n == "limit"));
        assert!(k.iter().any(|n| n == "type"));
    }

    #[test]
    fn the_nearest_name_is_suggested() {
        let k = known::<TaskPatch>();
        assert_eq!(nearest("stauts", &k), Some("status"));
        assert_eq!(nearest("xyzzy", &k), None);
        let e = unknown("field", &["stauts".into()], &k);
        assert_eq!(e.detail(), "stauts: unknown field; did you mean status?");
    }
}
