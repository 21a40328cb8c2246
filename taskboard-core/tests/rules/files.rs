//! Uploads, attachments and project files (REST-INTERFACE Attachments and
//! Project files; DECISIONS 6.2, 6.4–6.6; docs/decisions.md 6.b).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use taskboard_core::api::Download;
use taskboard_core::api::{FilePatch, NewMessage, Page, Patch};
use taskboard_core::{BoardOptions, ErrorKind};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use uuid::Uuid;

use crate::support::*;

async fn content(mut d: Download) -> String {
    let mut s = String::new();
    d.content.read_to_string(&mut s).await.unwrap();
    assert_eq!(d.size as usize, s.len());
    s
}

fn small_limit() -> BoardOptions {
    BoardOptions { max_upload_bytes: 1000, ..Default::default() }
}

/// Yields some bytes, then fails: a client that goes away mid-upload.
struct BrokenReader(usize);

impl AsyncRead for BrokenReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.0 == 0 {
            return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "gone")));
        }
        let n = self.0.min(buf.remaining()).min(100);
        buf.put_slice(&vec![b'x'; n]);
        self.0 -= n;
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn an_upload_over_the_limit_is_413_and_leaves_no_file() {
    let fx = board_on_disk_with(small_limit()).await;
    let too_big = vec![7u8; 1001];
    assert_eq!(
        kind(fx.board.upload(&fx.owner, "big.bin", None, &too_big[..]).await),
        ErrorKind::PayloadTooLarge
    );
    assert_eq!(files_under(fx.board.blob_dir()), Vec::<std::path::PathBuf>::new());
    let p = fx.project("web").await;
    assert_eq!(
        kind(fx.board.upload_file(&fx.owner, p.id, "big.bin", None, None, &too_big[..]).await),
        ErrorKind::PayloadTooLarge,
        "the same limit for project files"
    );
    assert!(files_under(fx.board.blob_dir()).is_empty());
    assert!(fx.board.list_files(p.id, None, Page::default()).await.unwrap().is_empty());
    // Exactly the limit is accepted.
    let up = fx.board.upload(&fx.owner, "max.bin", None, &vec![1u8; 1000][..]).await.unwrap();
    assert_eq!(up.size, 1000);
    assert_eq!(files_under(fx.board.blob_dir()).len(), 1);
}

#[tokio::test]
async fn an_upload_that_fails_midway_leaves_no_file() {
    let fx = board_on_disk().await;
    assert_eq!(
        kind(fx.board.upload(&fx.owner, "a.bin", None, BrokenReader(500)).await),
        ErrorKind::BadRequest
    );
    assert!(files_under(fx.board.blob_dir()).is_empty());
}

#[tokio::test]
async fn the_storage_name_is_generated_not_derived_from_the_file_name() {
    let fx = board().await;
    let up = fx.board.upload(&fx.owner, "../../etc/passwd", None, &b"x"[..]).await.unwrap();
    assert!(!up.storage_name.contains("passwd") && !up.storage_name.contains('/'));
    assert_eq!(up.filename, "../../etc/passwd", "the original name is kept for downloads");
    let other = fx.board.upload(&fx.owner, "../../etc/passwd", None, &b"y"[..]).await.unwrap();
    assert_ne!(up.storage_name, other.storage_name);
    assert_eq!(up.mime_type, "application/octet-stream");
    let png = fx.board.upload(&fx.owner, "cat.png", None, &b"png"[..]).await.unwrap();
    assert_eq!(png.mime_type, "image/png", "guessed from the name when not given");
}

#[tokio::test]
async fn attachments_download_with_their_name_type_and_disposition() {
    let fx = board().await;
    let png = fx.board.upload(&fx.owner, "cat.png", None, &b"meow"[..]).await.unwrap();
    let svg = fx.board.upload(&fx.owner, "logo.svg", None, &b"<svg/>"[..]).await.unwrap();
    let d = fx.board.open_attachment(png.file_id).await.unwrap();
    assert_eq!(
        (d.filename.as_str(), d.mime_type.as_str(), d.disposition()),
        ("cat.png", "image/png", "inline")
    );
    assert_eq!(content(d).await, "meow");
    let d = fx.board.open_attachment(svg.file_id).await.unwrap();
    assert_eq!(d.disposition(), "attachment", "SVG is never inline");
    assert_eq!(kind(fx.board.open_attachment(Uuid::now_v7()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn unbound_uploads_are_reclaimed_after_the_ttl() {
    let options = BoardOptions { unbound_upload_ttl: Duration::from_secs(60), ..Default::default() };
    let fx = board_on_disk_with(options).await;
    let p = fx.project("web").await;
    let stale = fx.board.upload(&fx.owner, "stale.txt", None, &b"stale"[..]).await.unwrap();
    let bound = fx.board.upload(&fx.owner, "bound.txt", None, &b"bound"[..]).await.unwrap();
    let m = NewMessage { chat_id: p.chat_id, attachments: vec![bound.clone()], ..Default::default() };
    fx.board.post_message(&fx.owner, m).await.unwrap();
    let now = jiff::Timestamp::now();
    assert_eq!(fx.board.reclaim_unbound_uploads(now).await.unwrap(), 0, "younger than the TTL");
    let later = now + Duration::from_secs(120);
    assert_eq!(fx.board.reclaim_unbound_uploads(later).await.unwrap(), 1);
    assert_eq!(kind(fx.board.open_attachment(stale.file_id).await), ErrorKind::NotFound);
    assert_eq!(content(fx.board.open_attachment(bound.file_id).await.unwrap()).await, "bound");
    assert_eq!(files_under(fx.board.blob_dir()).len(), 1, "the stale blob is gone");
    let late = NewMessage { chat_id: p.chat_id, attachments: vec![stale], ..Default::default() };
    assert_eq!(kind(fx.board.post_message(&fx.owner, late).await), ErrorKind::Validation);
    assert_eq!(fx.board.reclaim_unbound_uploads(later).await.unwrap(), 0);
}

#[tokio::test]
async fn invalid_project_file_names_are_400() {
    let fx = board().await;
    let p = fx.project("web").await;
    let long = "x".repeat(256);
    for bad in ["", ".", "..", "a/b", "a\\b", "a\0b", "tab\there", long.as_str()] {
        let r = fx.board.upload_file(&fx.owner, p.id, bad, None, None, &b"x"[..]).await;
        assert_eq!(kind(r), ErrorKind::BadRequest, "{bad:?}");
    }
    let ok = "é".repeat(127); // 254 bytes
    fx.board.upload_file(&fx.owner, p.id, &ok, None, None, &b"x"[..]).await.unwrap();
    assert!(files_under(fx.board.blob_dir()).len() == 1);
}

/// Names that look like another name, or like none (docs/decisions.md 6.d).
const DECEPTIVE_NAMES: &[&str] = &[
    " ",
    "   ",
    "\u{3000}",
    "\u{A0}\u{2003}",
    "invoice\u{202E}fdp.exe",
    "a\u{202A}b",
    "a\u{202B}b",
    "a\u{202C}b",
    "a\u{202D}b",
    "a\u{2066}b",
    "a\u{2067}b",
    "a\u{2068}b",
    "a\u{2069}b",
    "a\u{200E}b",
    "a\u{200F}b",
    "a\u{061C}b",
    "a\u{200B}b",
    "a\u{200C}b",
    "a\u{200D}b",
    "a\u{2060}b",
    "\u{FEFF}report.pdf",
    "a\u{00AD}b",
    "flag\u{E0067}",
    "line\u{2028}break",
];

#[tokio::test]
async fn blank_and_invisible_project_file_names_are_400_naming_the_character() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    for bad in DECEPTIVE_NAMES {
        let e = fx.board.upload_file(&fx.owner, p.id, bad, None, None, &b"x"[..]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadRequest, "{bad:?}");
        let why = if bad.trim().is_empty() { "blank".to_string() } else { "U+".to_string() };
        assert!(e.detail().contains(&why), "{bad:?}: {}", e.detail());
    }
    assert!(fx.board.list_files(p.id, None, Page::default()).await.unwrap().is_empty());
    assert!(files_under(fx.board.blob_dir()).is_empty(), "refused before any byte is stored");
    // Right-to-left scripts, accents, emoji with variation selectors and
    // inner spaces are names like any other.
    for good in ["שלום.txt", "تقرير.pdf", "résumé final.pdf", "☕\u{FE0F} notes.md", "a b"] {
        fx.board.upload_file(&fx.owner, p.id, good, None, None, &b"x"[..]).await.unwrap();
    }
}

#[tokio::test]
async fn attachments_with_invisible_names_are_refused_too() {
    let fx = board_on_disk().await;
    for bad in DECEPTIVE_NAMES {
        let e = fx.board.upload(&fx.owner, bad, None, &b"x"[..]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Validation, "{bad:?}");
        assert!(e.detail().starts_with("file:"), "{}", e.detail());
    }
    assert!(files_under(fx.board.blob_dir()).is_empty());
    // Attachment names keep their own, looser rule otherwise: they are
    // only shown, never used as a path.
    fx.board.upload(&fx.owner, "reports/2024.pdf", None, &b"x"[..]).await.unwrap();
}

#[tokio::test]
async fn uploading_an_existing_name_replaces_the_content_and_keeps_the_id() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", taskboard_core::model::Role::Member).await;
    let first = fx
        .board
        .upload_file(&fx.owner, p.id, "notes.txt", Some("v1 notes".into()), None, &b"one"[..])
        .await
        .unwrap();
    assert_eq!((first.size, first.mime_type.as_str()), (3, "text/plain"));
    assert_eq!(first.uploaded_by.id, fx.owner.id());
    let second = fx
        .board
        .upload_file(&ana, p.id, "notes.txt", None, Some("text/markdown"), &b"second"[..])
        .await
        .unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.size, 6);
    assert_eq!(second.mime_type, "text/markdown");
    assert_eq!(second.created_at, first.created_at);
    assert!(second.updated_at >= first.updated_at);
    assert_eq!(second.description.as_deref(), Some("v1 notes"), "kept when none is given");
    assert_eq!(second.uploaded_by.id, ana.id());
    assert_eq!(content(fx.board.open_file(p.id, first.id).await.unwrap()).await, "second");
    assert_eq!(files_under(fx.board.blob_dir()).len(), 1, "the old content is gone");
    let third =
        fx.board.upload_file(&fx.owner, p.id, "notes.txt", Some("v3".into()), None, &b"3"[..]).await.unwrap();
    assert_eq!(third.description.as_deref(), Some("v3"));
    assert_eq!(fx.board.list_files(p.id, None, Page::default()).await.unwrap().len(), 1);
}

#[tokio::test]
async fn project_files_are_listed_by_name_and_searched_without_case() {
    let fx = board().await;
    let p = fx.project("web").await;
    let other = fx.project("other").await;
    for n in ["Zeta.md", "alpha.TXT", "Design-Spec.pdf", "beta.txt"] {
        fx.board.upload_file(&fx.owner, p.id, n, None, None, &b"x"[..]).await.unwrap();
    }
    fx.board.upload_file(&fx.owner, other.id, "alpha.txt", None, None, &b"x"[..]).await.unwrap();
    let names = |search: Option<&str>| {
        let (board, _owner, id, search) =
            (fx.board.clone(), fx.owner.clone(), p.id, search.map(String::from));
        async move {
            board
                .list_files(id, search, Page::default())
                .await
                .unwrap()
                .into_iter()
                .map(|f| f.filename)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(names(None).await, ["Design-Spec.pdf", "Zeta.md", "alpha.TXT", "beta.txt"]);
    assert_eq!(names(Some(".txt")).await, ["alpha.TXT", "beta.txt"]);
    assert_eq!(names(Some("SPEC")).await, ["Design-Spec.pdf"]);
    assert!(names(Some("nothing")).await.is_empty());
    assert_eq!(kind(fx.board.list_files(Uuid::now_v7(), None, Page::default()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn project_files_are_read_described_and_deleted_within_their_project() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let other = fx.project("other").await;
    let f = fx.board.upload_file(&fx.owner, p.id, "a.txt", None, None, &b"a"[..]).await.unwrap();
    assert_eq!(fx.board.get_file(p.id, f.id).await.unwrap(), f);
    assert_eq!(kind(fx.board.get_file(other.id, f.id).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.open_file(other.id, f.id).await), ErrorKind::NotFound);
    let described = fx
        .board
        .update_file(&fx.owner, p.id, f.id, FilePatch { description: Patch::Value(long_text("about a")) })
        .await
        .unwrap();
    assert_eq!(described.description.as_deref(), Some("about a"));
    let cleared =
        fx.board.update_file(&fx.owner, p.id, f.id, FilePatch { description: Patch::Null }).await.unwrap();
    assert_eq!(cleared.description, None);
    assert_eq!(kind(fx.board.delete_file(&fx.owner, other.id, f.id).await), ErrorKind::NotFound);
    fx.board.delete_file(&fx.owner, p.id, f.id).await.unwrap();
    assert_eq!(kind(fx.board.get_file(p.id, f.id).await), ErrorKind::NotFound);
    assert!(files_under(fx.board.blob_dir()).is_empty());
    assert_eq!(
        kind(fx.board.upload_file(&fx.owner, Uuid::now_v7(), "a.txt", None, None, &b"a"[..]).await),
        ErrorKind::NotFound
    );
    assert!(files_under(fx.board.blob_dir()).is_empty(), "nothing kept for an unknown project");
}

fn long_text(s: &str) -> taskboard_core::validate::LongText {
    taskboard_core::validate::LongText::new(s).unwrap()
}
