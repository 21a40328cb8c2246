//! Seeds a board with many tasks through the core directly, for timing
//! `taskboard task list --json` on a large board.
//!
//! `cargo run --release -p taskboard-tests --example seed_tasks -- DIR [N]`
//! creates DIR with owner `owner` (password `owner-password-1`), project
//! `big`, and N tasks (default 100,000).

use futures_util::StreamExt;
use taskboard_core::api::{NewProject, NewTask};
use taskboard_core::validate::{Name, Password, Slug, Title};
use taskboard_core::{Board, BoardOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: seed_tasks DIR [N]")?;
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(100_000);
    let board = Board::open(&dir, BoardOptions::default()).await?;
    let boot = board
        .bootstrap_owner(Slug::new("owner")?, Some(Password::new(taskboard_tests::OWNER_PASSWORD)?))
        .await?
        .ok_or("the directory already holds a board")?;
    let owner = board.actor(boot.owner.id).await?;
    let project = board
        .create_project(
            &owner,
            NewProject {
                name: Name::new("Big")?,
                slug: Slug::new("big")?,
                description: None,
                repo_urls: vec![],
                auto_assign: false,
            },
        )
        .await?;
    let started = std::time::Instant::now();
    // Many creations in flight let the group commit batch them.
    let results: Vec<_> = futures_util::stream::iter(0..n)
        .map(|i| {
            let (board, owner) = (board.clone(), owner.clone());
            async move {
                let title = Title::new(format!("Task number {i}")).expect("a valid title");
                board.create_task(&owner, project.id, NewTask::titled(title)).await
            }
        })
        .buffer_unordered(256)
        .collect()
        .await;
    for r in results {
        r?;
    }
    board.flush().await?;
    eprintln!("seeded {n} tasks in {:.1?}", started.elapsed());
    Ok(())
}
