//! Prepares the benchmark board of `bench/run.sh` with the core directly:
//! 10,000 tasks, one project (`bench`) holding 1,000 of them, an agent
//! with its token, and prints the ids the load needs as shell variables.
//!
//! `cargo run --release -p taskboard-server --example seed -- <data-dir>`

use std::sync::Arc;

use taskboard_core::api::{NewMember, NewProject, NewTask};
use taskboard_core::model::{MemberType, Role, TaskStatus};
use taskboard_core::validate::{Name, Password, Slug, Title};
use taskboard_core::{Board, BoardOptions};
use tokio::sync::Semaphore;

const TASKS: usize = 10_000;
const IN_BENCH_PROJECT: usize = 1_000;
const OTHER_PROJECTS: usize = 9;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: seed <data-dir>")?;
    let board = Board::open(&dir, BoardOptions::default()).await?;
    board.bootstrap_owner(Slug::new("owner")?, Some(Password::new("bench-password")?)).await?;
    let owner = board.local_actor(Some("owner")).await?;
    let project = |slug: &str| NewProject {
        name: Name::new(slug).unwrap(),
        slug: Slug::new(slug).unwrap(),
        description: None,
        repo_urls: vec![],
        auto_assign: false,
    };
    let bench = board.create_project(&owner, project("bench")).await?;
    let load = board.create_project(&owner, project("load")).await?;
    let mut others = Vec::new();
    for i in 0..OTHER_PROJECTS {
        others.push(board.create_project(&owner, project(&format!("other-{i}"))).await?.id);
    }
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

    // Concurrent creations, so the core's group commit batches them.
    let gate = Arc::new(Semaphore::new(64));
    let mut handles = Vec::with_capacity(TASKS);
    for i in 0..TASKS {
        let permit = gate.clone().acquire_owned().await?;
        let board = board.clone();
        let owner = owner.clone();
        let project = if i < IN_BENCH_PROJECT { bench.id } else { others[i % OTHER_PROJECTS] };
        handles.push(tokio::spawn(async move {
            let mut new = NewTask::titled(Title::new(format!("Task number {i}")).unwrap());
            new.status = TaskStatus::ALL[i % TaskStatus::ALL.len()];
            let task = board.create_task(&owner, project, new).await;
            drop(permit);
            task.map(|t| t.id)
        }));
    }
    let mut first = None;
    for h in handles {
        let id = h.await??;
        first.get_or_insert(id);
    }
    board.flush().await?;
    println!("TOKEN={}", agent.token.ok_or("agents get a token")?);
    println!("TASK_ID={}", first.ok_or("no task")?);
    println!("PROJECT_ID={}", bench.id);
    println!("LOAD_PROJECT_ID={}", load.id);
    println!("CHAT_ID={}", bench.chat_id.ok_or("projects have a chat")?);
    Ok(())
}
