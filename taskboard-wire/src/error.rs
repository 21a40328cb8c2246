//! The one error type of the board. Each [`ErrorKind`] maps to exactly one
//! HTTP status and one machine-readable code (docs/rules.md, requests and errors), so the server
//! renders errors without deciding anything.

use std::fmt;

/// What went wrong, in the terms of the error table of docs/rules.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    Conflict,
    /// An `If-Match` precondition that does not hold.
    PreconditionFailed,
    PayloadTooLarge,
    /// A body in a media type the endpoint does not read.
    UnsupportedMediaType,
    Validation,
    MethodNotAllowed,
    /// Too many attempts (throttled logins, a full password-hashing
    /// queue); the error carries how long to wait.
    TooManyRequests,
    Internal,
    /// The service cannot serve now (`GET /ready` when the store cannot
    /// be read).
    Unavailable,
}

impl ErrorKind {
    /// The HTTP status of this kind.
    pub fn status(self) -> u16 {
        match self {
            ErrorKind::BadRequest => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::MethodNotAllowed => 405,
            ErrorKind::Conflict => 409,
            ErrorKind::PreconditionFailed => 412,
            ErrorKind::PayloadTooLarge => 413,
            ErrorKind::UnsupportedMediaType => 415,
            ErrorKind::Validation => 422,
            ErrorKind::TooManyRequests => 429,
            ErrorKind::Internal => 500,
            ErrorKind::Unavailable => 503,
        }
    }

    /// The snake_case code carried in error bodies.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::PreconditionFailed => "precondition_failed",
            ErrorKind::PayloadTooLarge => "payload_too_large",
            ErrorKind::UnsupportedMediaType => "unsupported_media_type",
            ErrorKind::Validation => "validation_error",
            ErrorKind::MethodNotAllowed => "method_not_allowed",
            ErrorKind::TooManyRequests => "too_many_requests",
            ErrorKind::Internal => "internal",
            ErrorKind::Unavailable => "unavailable",
        }
    }

    /// Every kind.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::BadRequest,
        ErrorKind::Unauthorized,
        ErrorKind::Forbidden,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::PreconditionFailed,
        ErrorKind::PayloadTooLarge,
        ErrorKind::UnsupportedMediaType,
        ErrorKind::Validation,
        ErrorKind::MethodNotAllowed,
        ErrorKind::TooManyRequests,
        ErrorKind::Internal,
        ErrorKind::Unavailable,
    ];

    /// The kind an error body's `code` names; more precise than the status
    /// when a proxy rewrote the latter.
    pub fn from_code(code: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The kind for an HTTP status, used by clients to turn responses back
    /// into errors.
    pub fn from_status(status: u16) -> ErrorKind {
        match status {
            400 => ErrorKind::BadRequest,
            401 => ErrorKind::Unauthorized,
            403 => ErrorKind::Forbidden,
            404 => ErrorKind::NotFound,
            405 => ErrorKind::MethodNotAllowed,
            409 => ErrorKind::Conflict,
            412 => ErrorKind::PreconditionFailed,
            413 => ErrorKind::PayloadTooLarge,
            415 => ErrorKind::UnsupportedMediaType,
            422 => ErrorKind::Validation,
            429 => ErrorKind::TooManyRequests,
            503 => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        }
    }
}

/// An error with its kind and a human readable detail. Details never carry
/// internals: storage and I/O failures are logged and reported as
/// `internal` with a generic text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
    /// Seconds to wait before trying again (`Retry-After`), for
    /// [`ErrorKind::TooManyRequests`].
    retry_after: Option<u64>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Error {
        Error { kind, detail: detail.into(), retry_after: None }
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn detail(&self) -> &str {
        &self.detail
    }
    /// Seconds the client should wait before trying again.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }
    pub fn bad_request(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::BadRequest, detail)
    }
    pub fn unauthorized(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unauthorized, detail)
    }
    pub fn forbidden(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::Forbidden, detail)
    }
    pub fn not_found(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::NotFound, detail)
    }
    pub fn conflict(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::Conflict, detail)
    }
    pub fn too_large(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::PayloadTooLarge, detail)
    }
    /// Too many attempts: try again in `retry_after` (rounded up to whole
    /// seconds, at least one).
    pub fn too_many_requests(detail: impl Into<String>, retry_after: std::time::Duration) -> Error {
        let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        Error { kind: ErrorKind::TooManyRequests, detail: detail.into(), retry_after: Some(secs.max(1)) }
    }

    pub fn unsupported_media_type(detail: impl Into<String>) -> Error {
        Error::new(ErrorKind::UnsupportedMediaType, detail)
    }

    /// A request that does not fit the schema; `field` names the culprit.
    pub fn invalid(field: &str, problem: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Validation, format!("{field}: {problem}"))
    }
    /// A failure of the machinery (storage, disk). The cause is logged, the
    /// caller sees a generic detail.
    pub fn internal(cause: impl fmt::Display) -> Error {
        tracing::error!(%cause, "internal error");
        Error::new(ErrorKind::Internal, "internal error")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.detail, self.kind.code())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::internal(e)
    }
}

/// The JSON body of every error response: a human readable `detail` and a
/// machine-readable `code`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ErrorBody {
    pub detail: String,
    pub code: String,
}

impl From<&Error> for ErrorBody {
    fn from(e: &Error) -> ErrorBody {
        ErrorBody { detail: e.detail.clone(), code: e.kind.code().to_string() }
    }
}
