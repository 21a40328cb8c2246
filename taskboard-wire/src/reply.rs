//! What an endpoint answers: JSON, a page of a list, a stream, a file,
//! nothing, or a switch to the event stream, and how each travels.

use std::pin::Pin;

use bytes::Bytes;
use schemars::{Schema, SchemaGenerator};
use tokio::io::AsyncRead;

use super::paged::Paged;
use super::{Wire, schema_of};
use crate::error::{Error, Result};

/// What an endpoint answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    Json,
    Download,
    Upgrade,
    /// 302 with a `Location`.
    Redirect,
}

/// An answer in its wire form.
pub enum Encoded {
    Json(Bytes),
    /// One resource's JSON with its entity tag, computed once per version
    /// of the resource and kept beside it (the board's rendered tasks).
    Tagged {
        json: Bytes,
        etag: std::sync::Arc<str>,
    },
    /// A stream of events, served as Server-Sent Events.
    Events(Box<dyn super::feed::Feed>),
    /// No content: 204 with no body.
    Empty,
    /// A page of a list: its JSON array, and the cursor of the next page
    /// (sent as a `Link` header).
    Page {
        json: Bytes,
        next: Option<String>,
    },
    /// A whole list sent as it is read (see [`super::paged::JsonStream`]).
    Stream(super::paged::JsonStream),
    Download(Download),
    Upgrade(Upgrade),
    /// 302 to this address, setting a cookie when there is one.
    Redirect(Redirect),
}

/// An answer type.
pub trait Reply: Send + 'static + Sized {
    const KIND: ReplyKind;
    /// Whether the answer may be 204 with no body.
    const MAY_BE_EMPTY: bool = false;
    /// The status and body this answer is sent with, for answers kept
    /// under an idempotency key; `None` for answers that are not kept
    /// (streams).
    fn stored_form(&self, status: u16) -> Option<(u16, Bytes)> {
        let _ = status;
        None
    }
    fn schema(g: &mut SchemaGenerator) -> Option<Schema>;
    fn encode(self) -> Result<Encoded>;
    fn decode(encoded: Encoded) -> Result<Self>;
}

impl<T: Wire> Reply for T {
    const KIND: ReplyKind = ReplyKind::Json;
    fn stored_form(&self, status: u16) -> Option<(u16, Bytes)> {
        serde_json::to_vec(self).ok().map(|v| (status, v.into()))
    }
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(schema_of::<T>(g))
    }
    fn encode(self) -> Result<Encoded> {
        serde_json::to_vec(&self).map(|v| Encoded::Json(v.into())).map_err(Error::internal)
    }
    fn decode(encoded: Encoded) -> Result<T> {
        match encoded {
            Encoded::Json(bytes)
            | Encoded::Tagged { json: bytes, .. }
            | Encoded::Page { json: bytes, .. } => serde_json::from_slice(&bytes)
                .map_err(|e| Error::internal(format!("unexpected response: {e}"))),
            _ => Err(Error::internal("unexpected response: expected JSON")),
        }
    }
}

/// A JSON answer, or none: `None` is 204 with no body.
impl<T: Wire> Reply for Paged<T> {
    const KIND: ReplyKind = ReplyKind::Json;
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(g.subschema_for::<Vec<T>>())
    }
    fn encode(self) -> Result<Encoded> {
        let json = serde_json::to_vec(&self.items).map_err(Error::internal)?;
        Ok(Encoded::Page { json: json.into(), next: self.next })
    }
    fn decode(encoded: Encoded) -> Result<Paged<T>> {
        let (json, next) = match encoded {
            Encoded::Json(json) | Encoded::Tagged { json, .. } => (json, None),
            Encoded::Page { json, next } => (json, next),
            _ => return Err(Error::internal("unexpected response: expected a JSON list")),
        };
        let items = serde_json::from_slice(&json)
            .map_err(|e| Error::internal(format!("unexpected response: {e}")))?;
        Ok(Paged { items, next })
    }
}

impl<T: Wire> Reply for Option<T> {
    const KIND: ReplyKind = ReplyKind::Json;
    const MAY_BE_EMPTY: bool = true;
    fn stored_form(&self, status: u16) -> Option<(u16, Bytes)> {
        match self {
            Some(t) => Reply::stored_form(t, status),
            None => Some((204, Bytes::new())),
        }
    }
    fn schema(g: &mut SchemaGenerator) -> Option<Schema> {
        Some(schema_of::<T>(g))
    }
    fn encode(self) -> Result<Encoded> {
        match self {
            Some(t) => Reply::encode(t),
            None => Ok(Encoded::Empty),
        }
    }
    fn decode(encoded: Encoded) -> Result<Option<T>> {
        match encoded {
            Encoded::Empty => Ok(None),
            encoded => <T as Reply>::decode(encoded).map(Some),
        }
    }
}

/// An opened file content, with what a download answer needs.
pub struct Download {
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
    pub content: Pin<Box<dyn AsyncRead + Send>>,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download")
            .field("filename", &self.filename)
            .field("mime_type", &self.mime_type)
            .field("size", &self.size)
            .finish()
    }
}

impl Download {
    /// `inline` for images other than SVG, `attachment` otherwise, so a
    /// browser never runs a script it downloads from the board.
    pub fn disposition(&self) -> &'static str {
        if self.mime_type.starts_with("image/") && !self.mime_type.starts_with("image/svg") {
            "inline"
        } else {
            "attachment"
        }
    }
}

impl Reply for Download {
    const KIND: ReplyKind = ReplyKind::Download;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn encode(self) -> Result<Encoded> {
        Ok(Encoded::Download(self))
    }
    fn decode(encoded: Encoded) -> Result<Download> {
        match encoded {
            Encoded::Download(d) => Ok(d),
            _ => Err(Error::internal("unexpected response: expected a file")),
        }
    }
}

/// The answer of the event stream endpoint: switch the connection to the
/// WebSocket protocol, resuming after `since`.
#[derive(Debug, Clone, Copy)]
pub struct Upgrade {
    pub since: Option<u64>,
}

impl Reply for Upgrade {
    const KIND: ReplyKind = ReplyKind::Upgrade;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn encode(self) -> Result<Encoded> {
        Ok(Encoded::Upgrade(self))
    }
    fn decode(encoded: Encoded) -> Result<Upgrade> {
        match encoded {
            Encoded::Upgrade(u) => Ok(u),
            _ => Err(Error::internal("unexpected response: expected an upgrade")),
        }
    }
}

/// A redirect of the browser: 302 to `location`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub location: String,
    /// A `Set-Cookie` value sent with it (the browser binding of single
    /// sign-on).
    pub set_cookie: Option<String>,
}

impl Reply for Redirect {
    const KIND: ReplyKind = ReplyKind::Redirect;
    fn schema(_: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn encode(self) -> Result<Encoded> {
        Ok(Encoded::Redirect(self))
    }
    fn decode(encoded: Encoded) -> Result<Redirect> {
        match encoded {
            Encoded::Redirect(redirect) => Ok(redirect),
            _ => Err(Error::internal("unexpected response: expected a redirect")),
        }
    }
}

/// A value a write made for a request returns, as the answer kept for
/// that request under its `Idempotency-Key`. The answer is stored by the
/// write that makes the change, in its transaction, so the value the
/// write returns knows the form its answer is sent in: an endpoint's
/// answer type ([`Reply`]) as it is sent, and `()`, the value of the
/// writes whose endpoints answer `{"ok": true}`.
pub trait Answer {
    /// The status and body this value is answered with, given the
    /// endpoint's status of success; `None` for a value that is no
    /// answer (a stream).
    fn stored_form(&self, status: u16) -> Option<(u16, Bytes)>;
}

impl<T: Reply> Answer for T {
    fn stored_form(&self, status: u16) -> Option<(u16, Bytes)> {
        Reply::stored_form(self, status)
    }
}

impl Answer for () {
    fn stored_form(&self, status: u16) -> Option<(u16, Bytes)> {
        Some((status, Bytes::from_static(b"{\"ok\":true}")))
    }
}
