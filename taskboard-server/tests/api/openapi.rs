//! The OpenAPI document as a client generator reads it: walked whole and
//! held to what the server does.

use serde_json::{Value, json};
use taskboard_core::api;
use taskboard_core::model::MemberType;

use crate::support::spawn_with;

/// Every operation of the document with its path and method.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            out.push((path.clone(), method.clone(), op));
        }
    }
    out
}

/// Calls `f` on every schema of the document, wherever it stands.
fn each_schema<'a>(v: &'a Value, in_schema: bool, f: &mut impl FnMut(&'a Value)) {
    if in_schema {
        f(v);
    }
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                match key.as_str() {
                    "schema" | "items" | "additionalProperties" | "not" | "contains" => {
                        each_schema(child, true, f)
                    }
                    "properties" | "$defs" | "schemas" => {
                        for s in child.as_object().into_iter().flat_map(|m| m.values()) {
                            each_schema(s, true, f);
                        }
                    }
                    "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                        for s in child.as_array().into_iter().flatten() {
                            each_schema(s, true, f);
                        }
                    }
                    // Examples and defaults are data, not schemas.
                    "default" | "examples" | "enum" | "const" => {}
                    _ => each_schema(child, false, f),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| each_schema(i, false, f)),
        _ => {}
    }
}

fn param<'a>(op: &'a Value, name: &str) -> Option<&'a Value> {
    op["parameters"].as_array()?.iter().find(|p| p["name"] == name && p["in"] == "query")
}

#[tokio::test]
async fn the_openapi_document_says_exactly_what_the_server_does() {
    let app = spawn_with(|c| c.dev = true).await;
    let doc: Value = app.get("/openapi.json", None).await.expect(200);
    assert_eq!(doc["servers"][0]["url"], "/");

    // Every schema is an object and every reference resolves.
    each_schema(&doc, false, &mut |s| {
        assert!(s.is_object(), "a schema that is not an object: {s}");
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.strip_prefix("#/components/schemas/").expect("local references");
            assert!(doc["components"]["schemas"][name].is_object(), "dangling {r}");
        }
    });

    let error_ref = json!({"$ref": "#/components/schemas/ErrorBody"});
    let allowed = ["400", "401", "403", "404", "409", "412", "413", "415", "422", "429"];
    for (path, method, op) in operations(&doc) {
        let name = op["operationId"].as_str().unwrap();
        let e = api::infos().into_iter().find(|e| e.name == name).expect("a declared endpoint");
        let responses = op["responses"].as_object().unwrap();
        assert!(responses.contains_key(&e.status.to_string()), "{name}");
        assert!(!responses.contains_key("default"), "{name}: errors are listed one by one");
        for (status, res) in responses {
            if status.starts_with('4') {
                assert!(allowed.contains(&status.as_str()), "{name}: {status}");
                assert_eq!(res["content"]["application/json"]["schema"], error_ref, "{name} {status}");
            }
        }
        let has = |s: &str| responses.contains_key(s);
        if e.auth {
            assert!(has("401") && has("422"), "{name}: credentials can be refused");
        }
        if op["requestBody"].is_object() {
            assert!(has("413") && has("415") && has("422"), "{name}: bodies can be refused");
        }
        if path.contains('{') {
            assert!(has("404") && has("422"), "{name}: path ids can be malformed or unknown");
        }
        let max_limit = if name == "list_messages" { 200 } else { 1000 };
        for (field, min, max) in [("limit", 1, max_limit), ("offset", 0, u64::from(u32::MAX))] {
            if let Some(p) = param(op, field) {
                let schema = &p["schema"];
                assert_eq!(schema["minimum"], json!(min), "{name} {field}: {schema}");
                assert_eq!(schema["maximum"], json!(max), "{name} {field}: {schema}");
            }
        }
        for p in op["parameters"].as_array().unwrap() {
            let t = &p["schema"]["type"];
            assert!(
                t.is_string() && *t != "null",
                "{name} {}: a parameter is absent, never null: {t}",
                p["name"]
            );
        }
        let download = name.starts_with("download_");
        if download {
            assert!(responses["200"]["content"]["*/*"].is_object(), "{name}: any media type");
            assert!(responses["200"]["headers"]["Content-Disposition"].is_object(), "{name}");
        }
        if download || name == "websocket" {
            assert!(param(op, "token").is_some(), "{name}: ?token= is documented");
        }
        assert_eq!(method, e.method.as_str().to_lowercase());
    }
    let ws = &doc["paths"]["/api/v1/ws"]["get"]["responses"];
    assert!(ws["101"].is_object() && ws["400"].is_object(), "{ws}");
    assert_eq!(
        doc["paths"]["/api/v1/auth/login"]["post"]["responses"]["429"]["headers"]["Retry-After"]["schema"]["type"],
        "integer"
    );

    // The member types offered for creation are exactly those accepted.
    let offered = &doc["components"]["schemas"]["NewMember"]["properties"]["type"]["enum"];
    for (i, t) in MemberType::ALL.iter().enumerate() {
        let slug = format!("m{i}");
        let res = app
            .post("/api/v1/members", app.owner(), json!({"name": slug, "slug": slug, "type": t.as_str()}))
            .await;
        let listed = offered.as_array().unwrap().contains(&json!(t.as_str()));
        assert_eq!(res.status == 201, listed, "{t}: {} {}", res.status, res.body);
    }
}

#[tokio::test]
async fn paging_bounds_are_those_of_the_document() {
    let app = spawn_with(|_| {}).await;
    for (path, max) in [("/api/v1/members", 1000), ("/api/v1/labels", 1000), ("/api/v1/messages", 200)] {
        for bad in [0, max + 1] {
            app.get(&format!("{path}?limit={bad}"), app.owner()).await.error(
                422,
                "validation_error",
                "limit",
            );
        }
        let res = app.get(&format!("{path}?limit={max}"), app.owner()).await;
        // Messages need a chat or task; the limit itself is accepted.
        assert!(
            res.status == 200 || !res.body["detail"].as_str().unwrap().starts_with("limit"),
            "{}",
            res.body
        );
    }
}
