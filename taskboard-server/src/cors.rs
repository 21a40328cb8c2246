//! CORS (docs/rules.md, configuration): three configured origins, with credentials; any
//! other origin gets no CORS header at all.

use hyper::HeaderMap;
use hyper::header::{self, HeaderValue};

use crate::{Config, LOCAL_DEV_ORIGIN};

pub(crate) struct Cors {
    origins: Vec<HeaderValue>,
}

const METHODS: HeaderValue = HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS");
const HEADERS: HeaderValue = HeaderValue::from_static("authorization, content-type");
const MAX_AGE: HeaderValue = HeaderValue::from_static("600");
const TRUE: HeaderValue = HeaderValue::from_static("true");
const VARY: HeaderValue = HeaderValue::from_static("origin");

impl Cors {
    pub fn new(config: &Config) -> Cors {
        let origins =
            // The local development origin only in development mode.
            [config.web_origin.as_deref(), config.dev_web_origin.as_deref(), config.dev.then_some(LOCAL_DEV_ORIGIN)]
                .into_iter()
                .flatten()
                .map(|o| o.trim_end_matches('/'))
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect();
        Cors { origins }
    }

    /// The request's origin, when it is one of the allowed ones.
    pub fn allowed_origin(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        self.origins
            .iter()
            .any(|o| o.as_bytes().eq_ignore_ascii_case(origin.as_bytes()))
            .then(|| origin.clone())
    }

    /// Headers of an actual cross-origin response.
    pub fn simple(&self, headers: &mut HeaderMap, origin: HeaderValue) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::ACCESS_CONTROL_ALLOW_CREDENTIALS, TRUE);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("content-disposition, taskboard-ignored-fields"),
        );
        headers.append(header::VARY, VARY);
    }

    /// Headers of a preflight answer. The requested headers are echoed,
    /// since the browser only asks for those it is about to send.
    pub fn preflight(&self, headers: &mut HeaderMap, origin: HeaderValue, request: &HeaderMap) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::ACCESS_CONTROL_ALLOW_CREDENTIALS, TRUE);
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, METHODS);
        let asked = request.get(header::ACCESS_CONTROL_REQUEST_HEADERS).cloned().unwrap_or(HEADERS);
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked);
        headers.insert(header::ACCESS_CONTROL_MAX_AGE, MAX_AGE);
        headers.append(header::VARY, VARY);
    }
}
