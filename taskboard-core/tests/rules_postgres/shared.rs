//! Two boards on one PostgreSQL database, each with its own process state,
//! as two server processes have.

use std::time::Duration;

use taskboard_core::board::Clock;
use taskboard_core::storage::postgres::scratch::Scratch;
use taskboard_core::{Board, BoardOptions};

use crate::support::*;

/// A lease that expires is released by exactly one of the processes that
/// look for expired leases at the same moment.
#[tokio::test]
async fn a_lease_expires_once_when_two_boards_look_at_once() {
    let clock = Clock::manual();
    let options = BoardOptions { clock: clock.clone(), ..Default::default() };
    let url = Scratch::shared().fresh_url();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Board::open_postgres(&url, dir_a.path(), options.clone()).await.unwrap();
    let b = Board::open_postgres(&url, dir_b.path(), options).await.unwrap();
    let boot = a.bootstrap_owner(slug("owner"), None).await.unwrap().expect("an empty board");
    assert!(b.bootstrap_owner(slug("owner"), None).await.unwrap().is_none(), "one board, one owner");
    let owner = a.actor(boot.owner.id).await.unwrap();
    let fx = Fx { board: a.clone(), owner, dir: None, _blobs: Some(dir_a) };
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let mut tasks = Vec::new();
    for i in 0..5 {
        let t = fx.task(&p, &format!("work {i}")).await;
        fx.board.take_leased(&bot, t.id, Some(10)).await.unwrap();
        tasks.push(t.id);
    }
    clock.advance(Duration::from_secs(11));
    let (on_a, on_b) = tokio::join!(a.expire_leases(), b.expire_leases());
    assert_eq!(on_a.unwrap() + on_b.unwrap(), 5, "each lease released once");
    for id in tasks {
        let expired = b
            .task_actions(&fx.owner, id, Default::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|a| a.action == taskboard_core::model::AuditAction::LeaseExpired)
            .count();
        assert_eq!(expired, 1);
    }
}
