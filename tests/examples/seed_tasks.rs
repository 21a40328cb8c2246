//! Seeds a board with many tasks through the core, in large batches (one
//! transaction per few thousand tasks, each task by the board's rules).
//!
//! `cargo run --release -p taskboard-tests --example seed_tasks -- DIR [N] [SMALL]`
//! creates DIR with owner `owner` (password `owner-password-1`), an agent
//! `bench-agent` (its token printed), project `big` holding N tasks
//! (default 100,000) and SMALL small projects (default 100) of 10 tasks.
//! In `big`, every third task is in review, every fifth carries the label
//! `hot` and every seventh is assigned to the agent. Prints the ids a
//! benchmark needs as shell variables.

use taskboard_core::api::{NewMember, NewProject, NewTask};
use taskboard_core::model::{MemberType, Role, TaskStatus};
use taskboard_core::validate::{LabelName, Name, Password, Slug, Title};
use taskboard_core::{Board, BoardOptions};

const BATCH: usize = 5_000;

fn project(slug: &str) -> NewProject {
    NewProject {
        name: Name::new(slug).expect("a valid name"),
        slug: Slug::new(slug).expect("a valid slug"),
        description: None,
        repo_urls: vec![],
        auto_assign: false,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: seed_tasks DIR [N] [SMALL]")?;
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(100_000);
    let small: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(100);
    let board = Board::open(&dir, BoardOptions::default()).await?;
    let boot = board
        .bootstrap_owner(Slug::new("owner")?, Some(Password::new(taskboard_tests::OWNER_PASSWORD)?))
        .await?
        .ok_or("the directory already holds a board")?;
    let owner = board.actor(boot.owner.id).await?;
    let agent = board
        .create_member(
            &owner,
            NewMember {
                name: Name::new("Bench agent")?,
                slug: Slug::new("bench-agent")?,
                kind: MemberType::Agent,
                role: Role::Member,
                agent_config: None,
            },
        )
        .await?;
    let big = board.create_project(&owner, project("big")).await?;
    let started = std::time::Instant::now();
    for i in 0..small {
        let p = board.create_project(&owner, project(&format!("small-{i}"))).await?;
        let tasks = (0..10).map(|j| NewTask::titled(Title::new(format!("Small task {j}")).expect("a title")));
        board.create_tasks(&owner, p.id, tasks.collect()).await?;
    }
    let hot = vec![LabelName::new("hot")?];
    let mut done = 0;
    while done < n {
        let batch: Vec<NewTask> = (done..n.min(done + BATCH))
            .map(|i| {
                let mut t = NewTask::titled(Title::new(format!("Task number {i}")).expect("a valid title"));
                if i % 3 == 0 {
                    t.status = TaskStatus::Review;
                }
                if i % 5 == 0 {
                    t.labels = hot.clone();
                }
                if i % 7 == 0 {
                    t.assignee_id = Some(agent.id);
                }
                t
            })
            .collect();
        done += batch.len();
        board.create_tasks(&owner, big.id, batch).await?;
    }
    board.flush().await?;
    eprintln!("seeded {n} tasks (and {small} small projects) in {:.1?}", started.elapsed());
    println!("TOKEN={}", agent.token.ok_or("agents get a token")?);
    println!("PROJECT_ID={}", big.id);
    println!("CHAT_ID={}", big.chat_id.ok_or("projects have a chat")?);
    Ok(())
}
