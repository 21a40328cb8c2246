//! The web board: `GET /` and its assets, embedded in the binary so the
//! board works with no internet access (docs/decisions.md, web board).
//!
//! Every asset lives under `/assets/<version>/<file>`, where `<version>`
//! is a hash of all the assets together: the ES modules import each other
//! by relative path, so one version for the set keeps those imports plain
//! while any change still gives every file a new address. Assets are
//! cached for a year; the page itself is revalidated on every load.

use std::sync::OnceLock;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response};
use sha2::{Digest, Sha256};

use crate::response::ResBody;

/// The files of the board: name, content type, content.
const FILES: &[(&str, &str, &[u8])] = &[
    ("style.css", "text/css; charset=utf-8", include_bytes!("../web/style.css")),
    ("app.js", JS, include_bytes!("../web/app.js")),
    ("api.js", JS, include_bytes!("../web/api.js")),
    ("store.js", JS, include_bytes!("../web/store.js")),
    ("dom.js", JS, include_bytes!("../web/dom.js")),
    ("markdown.js", JS, include_bytes!("../web/markdown.js")),
    ("board.js", JS, include_bytes!("../web/board.js")),
    ("task.js", JS, include_bytes!("../web/task.js")),
    ("messages.js", JS, include_bytes!("../web/messages.js")),
    ("chat.js", JS, include_bytes!("../web/chat.js")),
    ("members.js", JS, include_bytes!("../web/members.js")),
    ("member.js", JS, include_bytes!("../web/member.js")),
    ("files.js", JS, include_bytes!("../web/files.js")),
    ("icons.js", JS, include_bytes!("../web/icons.js")),
    ("runs.js", JS, include_bytes!("../web/runs.js")),
    ("changes.js", JS, include_bytes!("../web/changes.js")),
    ("diff.js", JS, include_bytes!("../web/diff.js")),
    ("agents.js", JS, include_bytes!("../web/agents.js")),
    ("webhooks.js", JS, include_bytes!("../web/webhooks.js")),
    ("secret.js", JS, include_bytes!("../web/secret.js")),
    ("icon.svg", "image/svg+xml", include_bytes!("../web/icon.svg")),
];

const JS: &str = "text/javascript; charset=utf-8";

const INDEX: &str = include_str!("../web/index.html");

/// The page may run only its own scripts and talk only to its own origin
/// (the WebSocket included: `'self'` covers `ws:`/`wss:` of the same host).
/// Images may also be `blob:` addresses, which only the page can make,
/// from content it fetched (previews of project files).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; \
                   connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

struct Asset {
    content_type: HeaderValue,
    plain: Bytes,
    gzip: Bytes,
}

struct Site {
    version: String,
    index: Asset,
    assets: Vec<(&'static str, Asset)>,
}

fn gzip(data: &[u8]) -> Bytes {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).expect("writing to a Vec does not fail");
    Bytes::from(encoder.finish().expect("writing to a Vec does not fail"))
}

fn asset(content_type: &str, plain: Bytes) -> Asset {
    Asset { content_type: HeaderValue::from_str(content_type).expect("valid"), gzip: gzip(&plain), plain }
}

fn site() -> &'static Site {
    static SITE: OnceLock<Site> = OnceLock::new();
    SITE.get_or_init(|| {
        let mut hash = Sha256::new();
        for (name, _, content) in FILES {
            hash.update(name.as_bytes());
            hash.update((content.len() as u64).to_le_bytes());
            hash.update(content);
        }
        let digest = hash.finalize();
        let version: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        let index = INDEX.replace("{{assets}}", &format!("/assets/{version}"));
        Site {
            index: asset("text/html; charset=utf-8", Bytes::from(index)),
            assets: FILES
                .iter()
                .map(|(name, ct, content)| (*name, asset(ct, Bytes::from_static(content))))
                .collect(),
            version,
        }
    })
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',').any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                matches!(p.trim().replace(' ', "").as_str(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000")
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
    })
}

fn respond(asset: &Asset, headers: &HeaderMap, cache: &'static str) -> Response<ResBody> {
    let gz = accepts_gzip(headers);
    let body = if gz { asset.gzip.clone() } else { asset.plain.clone() };
    let mut res = Response::new(Either::Left(Full::new(body)));
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, asset.content_type.clone());
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if gz {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

/// Answers the requests for the page and its assets; `None` for every
/// other path, which goes to the API router.
pub(crate) fn serve<B>(req: &Request<B>) -> Option<Response<ResBody>> {
    let path = req.uri().path();
    let asset_name = path.strip_prefix("/assets/");
    if path != "/" && path != "/index.html" && asset_name.is_none() {
        return None;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut res = crate::response::error(&taskboard_core::Error::new(
            taskboard_core::ErrorKind::MethodNotAllowed,
            format!("{} is not allowed here; allowed: GET, HEAD", req.method()),
        ));
        res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(res);
    }
    let site = site();
    let Some(rest) = asset_name else {
        let mut res = respond(&site.index, req.headers(), "no-cache");
        let h = res.headers_mut();
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        return Some(res);
    };
    let found = rest
        .split_once('/')
        .filter(|(version, _)| *version == site.version)
        .and_then(|(_, name)| site.assets.iter().find(|(n, _)| *n == name));
    Some(match found {
        Some((_, asset)) => respond(asset, req.headers(), IMMUTABLE),
        None => crate::response::error(&taskboard_core::Error::not_found(format!("no such asset: {path}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_chosen_unless_refused() {
        let mut h = HeaderMap::new();
        assert!(!accepts_gzip(&h));
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip, deflate, br"));
        assert!(accepts_gzip(&h));
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("br, gzip;q=0"));
        assert!(!accepts_gzip(&h));
    }

    #[test]
    fn the_page_names_the_current_assets_and_has_no_inline_script() {
        let site = site();
        let page = std::str::from_utf8(&site.index.plain).unwrap();
        assert!(page.contains(&format!("/assets/{}/app.js", site.version)));
        assert!(!page.contains("{{assets}}"));
        // Every <script> of the page loads a file: no inline code.
        for chunk in page.split("<script").skip(1) {
            let tag_end = chunk.find('>').unwrap();
            assert!(chunk[..tag_end].contains("src="), "inline script in index.html");
            assert!(chunk[tag_end + 1..].trim_start().starts_with("</script>"));
        }
    }

    #[test]
    fn no_asset_writes_user_text_as_html() {
        for (name, _, content) in FILES {
            let text = String::from_utf8_lossy(content);
            for banned in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("] {
                assert!(!text.contains(banned), "{name} uses {banned}");
            }
        }
    }
}
