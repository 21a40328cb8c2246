//! How much disk a board takes for its chat: posts N chat messages of a
//! given size through the core, closes the board, and reports the size of
//! `board.redb` against the content bytes, the bytes each table stores
//! and redb's own accounting (leaf, metadata and fragmented bytes).
//!
//! `cargo run --release -p taskboard-core --example store_size -- [N] [BYTES] [text|random] [DATA_DIR]`
//! (defaults: 2,000 messages of 100,000 bytes of text, in a temporary
//! directory). With DATA_DIR the board is kept there for a server to
//! open, with an agent whose token is printed, and the report is shell
//! variables: `CONTENT_BYTES`, `TOKEN`, `CHAT_ID`.

use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use taskboard_core::api::{NewMember, NewMessage, NewProject};
use taskboard_core::model::{MemberType, Role};
use taskboard_core::storage::tables;
use taskboard_core::validate::{Name, Password, Slug};
use taskboard_core::{Board, BoardOptions};
use tokio::sync::Semaphore;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(2_000), |a| a.parse())?;
    let size: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let kind = args.next().unwrap_or_else(|| "text".into());
    let keep = args.next().map(std::path::PathBuf::from);
    let scratch = tempfile::tempdir()?;
    let dir = keep.clone().unwrap_or_else(|| scratch.path().to_path_buf());
    let board = Board::open(&dir, BoardOptions::default()).await?;
    board.bootstrap_owner(Slug::new("owner")?, Some(Password::new("size-password")?)).await?;
    let owner = board.local_actor(Some("owner")).await?;
    let project = board
        .create_project(
            &owner,
            NewProject {
                name: Name::new("Chat")?,
                slug: Slug::new("chat")?,
                description: None,
                repo_urls: vec![],
                auto_assign: false,
            },
        )
        .await?;
    let chat_id = project.chat_id.ok_or("projects have a chat")?;
    let agent = board
        .create_member(
            &owner,
            NewMember {
                name: Name::new("Reader")?,
                slug: Slug::new("reader")?,
                kind: MemberType::Agent,
                role: Role::Member,
                agent_config: None,
            },
        )
        .await?;
    board.add_project_member(&owner, project.id, agent.id).await?;

    let gate = Arc::new(Semaphore::new(16));
    let mut handles = Vec::with_capacity(n);
    let mut content_bytes = 0u64;
    for i in 0..n {
        let content = content(&kind, size, i as u64);
        content_bytes += content.len() as u64;
        let permit = gate.clone().acquire_owned().await?;
        let (board, owner) = (board.clone(), owner.clone());
        handles.push(tokio::spawn(async move {
            let m = NewMessage { chat_id: Some(chat_id), content, ..Default::default() };
            let r = board.post_message(&owner, m).await;
            drop(permit);
            r.map(|_| ())
        }));
    }
    for h in handles {
        h.await??;
    }
    board.flush().await?;
    let memory = board.event_memory();
    drop(board);
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .unwrap_or_default();
    eprintln!("writer process: {peak}; events in memory: {} ({} bytes)", memory.events, memory.bytes);
    if keep.is_some() {
        println!("CONTENT_BYTES={content_bytes}");
        println!("TOKEN={}", agent.token.ok_or("agents get a token")?);
        println!("CHAT_ID={chat_id}");
        return Ok(());
    }

    let path = dir.join("board.redb");
    let file = std::fs::metadata(&path)?.len();
    println!("{n} messages of {size} bytes ({kind}): content {content_bytes} bytes");
    println!("board.redb {file} bytes = {:.2} x content", file as f64 / content_bytes as f64);
    let mut db = redb::Database::open(&path)?;
    {
        let r = db.begin_read()?;
        let mut stored = 0u64;
        for table in tables::ALL {
            let t = r.open_table(TableDefinition::<&[u8], &[u8]>::new(table.name))?;
            let s = t.stats()?;
            if s.stored_bytes() > 1_000_000 {
                println!(
                    "  {:<28} {:>6} entries, stored {:>12} bytes, leaf pages {:>7}, fragmented {:>11}",
                    table.name,
                    t.len()?,
                    s.stored_bytes(),
                    s.leaf_pages(),
                    s.fragmented_bytes()
                );
            }
            stored += s.stored_bytes();
        }
        println!(
            "  all tables stored {stored} bytes = {:.2} x content",
            stored as f64 / content_bytes as f64
        );
    }
    let w = db.begin_write()?;
    let s = w.stats()?;
    println!(
        "  redb: allocated pages {} ({} bytes), leaf bytes {}, metadata {}, fragmented {}",
        s.allocated_pages(),
        s.allocated_pages() * s.page_size() as u64,
        s.stored_bytes(),
        s.metadata_bytes(),
        s.fragmented_bytes()
    );
    w.abort()?;
    db.compact()?;
    drop(db);
    let compacted = std::fs::metadata(&path)?.len();
    println!(
        "after Database::compact: {compacted} bytes = {:.2} x content",
        compacted as f64 / content_bytes as f64
    );
    Ok(())
}

/// `size` bytes of chat content: words of a small vocabulary (`text`,
/// compressible like prose) or random letters (`random`).
fn content(kind: &str, size: usize, seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = String::with_capacity(size + 16);
    while out.len() < size {
        if kind == "random" {
            out.push((b'a' + (next() % 26) as u8) as char);
        } else {
            let word = next() % 2_000;
            let len = 2 + (word % 9) as usize;
            let mut w = word;
            for _ in 0..len {
                out.push((b'a' + (w % 26) as u8) as char);
                w = w / 26 + 7;
            }
            out.push(if next() % 12 == 0 { '\n' } else { ' ' });
        }
    }
    out.truncate(size);
    out
}
