//! A file in a request: what a multipart body carries.

use std::pin::Pin;

use tokio::io::AsyncRead;

/// A file sent as `multipart/form-data`: its `file` part streamed, and the
/// text parts that came before it.
pub struct Upload {
    pub filename: String,
    pub mime_type: Option<String>,
    /// The length of `content`, when known before sending.
    pub size: Option<u64>,
    pub content: Pin<Box<dyn AsyncRead + Send>>,
    pub fields: Vec<(String, String)>,
    /// The text fields that came after the file, known once `content`
    /// has been read to its end.
    pub late: LateFields,
}

/// The text fields of a multipart body that follow its file: the sender
/// fills them in when the file's content ends.
#[derive(Debug, Clone, Default)]
pub struct LateFields(std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>);

impl LateFields {
    pub fn set(&self, fields: Vec<(String, String)>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = fields;
    }

    pub fn get(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload").field("filename", &self.filename).field("fields", &self.fields).finish()
    }
}

impl Upload {
    /// The last text field of this name: after the file when the content
    /// has been read, else before it.
    pub fn field(&self, name: &str) -> Option<String> {
        let late = self.late.get();
        let last = |fields: &[(String, String)]| {
            fields.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        };
        last(&late).or_else(|| last(&self.fields))
    }
}
