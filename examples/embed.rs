//! Embedding Taskboard: open a board in a temporary directory, create an
//! owner, a project, an agent and a task, let the agent take the task and
//! comment on it, and print the events the board published.
//!
//! Run with `cargo run --example embed`.

use taskboard_core::api::{NewMember, NewMessage, NewProject, NewTask};
use taskboard_core::model::{MemberType, Role};
use taskboard_core::validate::{Name, Slug, Title};
use taskboard_core::{Board, BoardOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let board = Board::open(dir.path(), BoardOptions::default()).await?;
    let mut events = board.subscribe(Some(0));

    // The first owner of an empty board; the password is generated.
    let boot = board.bootstrap_owner(Slug::new("owner")?, None).await?.expect("the board is empty");
    let password = boot.generated_password.expect("no password was given");
    println!("owner {} created with password {password}", boot.owner.slug);

    // Credentials resolve to the acting member, as the server does per request.
    let login = board.login("owner", &password, None).await?;
    let owner = board.authenticate(&login.token).await?;

    let project = board
        .create_project(
            &owner,
            NewProject {
                name: Name::new("Web app")?,
                slug: Slug::new("web")?,
                description: None,
                repo_urls: vec![],
                auto_assign: false,
            },
        )
        .await?;
    let agent = board
        .create_member(
            &owner,
            NewMember {
                name: Name::new("Build bot")?,
                slug: Slug::new("bot")?,
                kind: MemberType::Agent,
                role: Role::Member,
                agent_config: None,
            },
        )
        .await?;
    let bot = board.authenticate(agent.token.as_deref().expect("agents get a token")).await?;

    let task =
        board.create_task(&owner, project.id, NewTask::titled(Title::new("Fix the login page")?)).await?;
    let taken = board.take(&bot, task.id).await?;
    println!(
        "{} is {} and assigned to {}",
        taken.key,
        taken.status,
        taken.assignee.map(|a| a.slug).unwrap_or_default()
    );

    board
        .post_message(
            &bot,
            NewMessage { task_id: Some(task.id), content: "On it, @owner.".into(), ..Default::default() },
        )
        .await?;

    println!("events:");
    while events.position() < board.latest_seq() {
        let event = events.next().await?;
        println!("  #{} {}", event.seq, event.kind);
    }
    Ok(())
}
