use std::time::Instant;
use taskboard_core::api::{NewProject, NewTask};
use taskboard_core::validate::{Name, Slug, Title};
use taskboard_core::{Board, BoardOptions};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir_in("/work/main/target").unwrap();
    let board = Board::open(dir.path(), BoardOptions::default()).await.unwrap();
    let boot = board.bootstrap_owner(Slug::new("owner").unwrap(), None).await.unwrap().unwrap();
    let owner = board.actor(boot.owner.id).await.unwrap();
    let p = board
        .create_project(
            &owner,
            NewProject {
                name: Name::new("P").unwrap(),
                slug: Slug::new("p").unwrap(),
                description: None,
                repo_urls: vec![],
                auto_assign: false,
            },
        )
        .await
        .unwrap();
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(20000);
    let start = Instant::now();
    let mut handles = Vec::new();
    for w in 0..64 {
        let (board, owner) = (board.clone(), owner.clone());
        handles.push(tokio::spawn(async move {
            for i in 0..n / 64 {
                board
                    .create_task(&owner, p.id, NewTask::titled(Title::new(format!("task {w} {i}")).unwrap()))
                    .await
                    .unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let el = start.elapsed();
    println!("{} creates in {:?}: {:.0}/s", n, el, n as f64 / el.as_secs_f64());
}
