//! Two boards on one PostgreSQL database, each with its own process state,
//! as two server processes have.

use std::time::Duration;

use taskboard_core::api::{Patch, TaskPatch};
use taskboard_core::board::Clock;
use taskboard_core::{Actor, Board, BoardOptions};
use taskboard_pg_scratch::Scratch;

use crate::support::*;

/// A lease that expires is released by exactly one of the processes that
/// look for expired leases at the same moment.
#[tokio::test]
async fn a_lease_expires_once_when_two_boards_look_at_once() {
    let clock = Clock::manual();
    let (fx, b, _, _dir) = two_boards(BoardOptions { clock: clock.clone(), ..Default::default() }).await;
    let a = fx.board.clone();
    assert!(b.bootstrap_owner(slug("owner"), None).await.unwrap().is_none(), "one board, one owner");
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
            .task_actions(id, Default::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|a| a.action == taskboard_core::model::AuditAction::LeaseExpired)
            .count();
        assert_eq!(expired, 1);
    }
}

/// Two boards on a fresh database, as two processes have, with the owner
/// acting on each.
async fn two_boards(options: BoardOptions) -> (Fx, Board, Actor, tempfile::TempDir) {
    let url = Scratch::shared().fresh_url();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Board::open_postgres(&url, dir_a.path(), options.clone()).await.unwrap();
    let b = Board::open_postgres(&url, dir_b.path(), options).await.unwrap();
    let boot = a.bootstrap_owner(slug("owner"), None).await.unwrap().expect("an empty board");
    let owner = a.actor(boot.owner.id).await.unwrap();
    let owner_b = b.actor(boot.owner.id).await.unwrap();
    (Fx { board: a, owner, dir: None, _blobs: Some(dir_a) }, b, owner_b, dir_b)
}

/// The seqs of the next events of `sub` up to seq `last`, waiting for
/// each at most `DEADLINE` (the wake-up is one notification, or the
/// once-a-second read of the events table).
async fn take_to(sub: &mut taskboard_core::Subscription, last: u64) -> Vec<u64> {
    const DEADLINE: Duration = Duration::from_secs(5);
    let mut seqs = Vec::new();
    while seqs.last().is_none_or(|s| *s < last) {
        let event = tokio::time::timeout(DEADLINE, sub.next()).await.expect("the next event").unwrap();
        seqs.push(event.seq);
    }
    seqs
}

/// Events committed through either board reach the subscribers of both,
/// every seq once and in order, own and other events interleaved.
#[tokio::test]
async fn each_board_publishes_the_events_of_both_in_seq_order() {
    let (fx, b, owner_b, _dir) = two_boards(BoardOptions::default()).await;
    let p = fx.project("web").await;
    fx.board.flush().await.unwrap();
    let since = fx.board.latest_seq();
    let mut on_a = fx.board.subscribe(Some(since));
    // B may not have read A's latest events yet: it still takes `since`.
    let mut on_b = b.subscribe(Some(since));
    assert!(!on_b.resync_required);
    const EACH: usize = 15;
    let creations = (0..2 * EACH).map(|i| {
        let (board, owner) = if i % 2 == 0 { (&fx.board, &fx.owner) } else { (&b, &owner_b) };
        board.create_task(owner, p.id, new_task(&format!("t{i}")))
    });
    for created in futures_util::future::join_all(creations).await {
        created.unwrap();
    }
    // Each write answers once its events are published where it was made.
    let last = fx.board.latest_seq().max(b.latest_seq());
    assert!(last >= since + 2 * EACH as u64);
    let expected: Vec<u64> = (since + 1..=last).collect();
    assert_eq!(take_to(&mut on_a, last).await, expected);
    assert_eq!(take_to(&mut on_b, last).await, expected);
}

/// What one board caches follows the changes made through the other:
/// a token revoked there is refused here, a task changed there is not
/// served stale here.
#[tokio::test]
async fn caches_follow_changes_made_through_the_other_board() {
    let (fx, b, owner_b, _dir) = two_boards(BoardOptions::default()).await;
    let (bot, token) = fx.agent_with("bot", Default::default()).await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "before").await;
    // Both cached on B.
    assert_eq!(b.authenticate(&token).await.unwrap().id(), bot.id());
    assert_eq!(b.get_task(&owner_b, t.id).await.unwrap().title.as_str(), "before");

    fx.board.revoke_token(&fx.owner, bot.id()).await.unwrap();
    let patch = TaskPatch { title: Patch::Value(title("after")), ..Default::default() };
    fx.board.update_task(&fx.owner, t.id, patch).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while b.authenticate(&token).await.is_ok() {
        assert!(tokio::time::Instant::now() < deadline, "the revoked token is still good on B");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    while b.get_task(&owner_b, t.id).await.unwrap().title.as_str() != "after" {
        assert!(tokio::time::Instant::now() < deadline, "B serves the task as it was");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The statuses told by the next `agent.status` events of `sub`, up to
/// `count`.
async fn statuses(sub: &mut taskboard_core::Subscription, count: usize) -> Vec<String> {
    let mut seen = Vec::new();
    while seen.len() < count {
        let event =
            tokio::time::timeout(Duration::from_secs(5), sub.next()).await.expect("an event").unwrap();
        if event.kind == taskboard_core::events::EventKind::AgentStatus {
            seen.push(event.data()["status"].as_str().unwrap().to_string());
        }
    }
    seen
}

/// A member connected to two processes stays online until its last
/// stream on either closes; one left listed by a process that died goes
/// offline once that process's entry expires, once.
#[tokio::test]
async fn a_member_is_online_while_any_process_lists_it() {
    use taskboard_core::model::MemberStatus;
    let clock = Clock::manual();
    let (fx, b, _, _dir) = two_boards(BoardOptions { clock: clock.clone(), ..Default::default() }).await;
    let a = fx.board.clone();
    let (bot, _) = fx.agent_with("bot", Default::default()).await;
    let id = bot.id();
    let status = |board: Board| async move { board.actor(id).await.unwrap().member.status };
    let mut sub = b.subscribe(Some(a.latest_seq()));

    a.connected(&bot).await.unwrap();
    b.connected(&bot).await.unwrap();
    a.disconnected(&bot).await.unwrap();
    assert_eq!(status(b.clone()).await, MemberStatus::Online, "B still lists it");
    b.disconnected(&bot).await.unwrap();
    assert_eq!(status(a.clone()).await, MemberStatus::Offline);
    assert_eq!(statuses(&mut sub, 2).await, ["online", "offline"]);

    // A lists it, then ends without closing its stream.
    a.connected(&bot).await.unwrap();
    drop(fx);
    drop(a);
    assert_eq!(b.renew_presence().await.unwrap(), 0, "A's entry has not expired");
    assert_eq!(status(b.clone()).await, MemberStatus::Online);
    clock.advance(taskboard_core::board::PRESENCE_TTL + Duration::from_secs(1));
    assert_eq!(b.renew_presence().await.unwrap(), 1, "set offline by B");
    assert_eq!(b.renew_presence().await.unwrap(), 0, "once");
    assert_eq!(status(b.clone()).await, MemberStatus::Offline);
    assert_eq!(statuses(&mut sub, 2).await, ["online", "offline"]);
}

/// Many writers on three boards of one database (three processes), and
/// readers that resume with `since` on another board every few events:
/// each reader sees every event once and in seq order, whatever board
/// committed it and whichever board it resumes on, and each task number
/// of a project is given once. A store that published an event before a
/// lower seq still in flight had committed would show a gap to some
/// reader or answer a resume with `resync_required`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_resuming_on_other_boards_see_every_event_once_in_order() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    const BOARDS: usize = 3;
    const WRITERS: usize = 6;
    const EACH: usize = 12;
    const RESUME_EVERY: usize = 17;
    let url = Scratch::shared().fresh_url();
    let dirs: Vec<_> = (0..BOARDS).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut boards = Vec::new();
    for dir in &dirs {
        boards.push(Board::open_postgres(&url, dir.path(), BoardOptions::default()).await.unwrap());
    }
    let boot = boards[0].bootstrap_owner(slug("owner"), None).await.unwrap().expect("an empty board");
    let mut owners = Vec::new();
    for board in &boards {
        owners.push(board.actor(boot.owner.id).await.unwrap());
    }
    let mut projects = Vec::new();
    for s in ["web", "api"] {
        projects.push(boards[0].create_project(&owners[0], new_project(s)).await.unwrap());
    }
    for board in &boards {
        board.flush().await.unwrap();
    }
    let since = boards.iter().map(Board::latest_seq).max().unwrap();

    // 0 until the writers are done, then the newest seq.
    let last = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..BOARDS)
        .map(|first| {
            let (boards, last) = (boards.clone(), last.clone());
            tokio::spawn(async move {
                let mut seen: Vec<(u64, Option<serde_json::Value>)> = Vec::new();
                let mut on = first;
                let mut resumed = 0;
                let mut sub = boards[on].subscribe(Some(since));
                loop {
                    let position = seen.last().map_or(since, |(s, _)| *s);
                    let target = last.load(Ordering::SeqCst);
                    if target != 0 && position >= target {
                        return seen;
                    }
                    if seen.len() >= resumed + RESUME_EVERY {
                        resumed = seen.len();
                        // Resume on the next board, from the last seq seen.
                        on = (on + 1) % BOARDS;
                        sub = boards[on].subscribe(Some(position));
                        assert!(!sub.resync_required, "resuming at {position} on board {on}");
                    }
                    let next = tokio::time::timeout(Duration::from_millis(200), sub.next()).await;
                    let Ok(event) = next else { continue };
                    let event = event.unwrap();
                    let created =
                        (event.kind == taskboard_core::events::EventKind::TaskCreated).then(|| event.data());
                    seen.push((event.seq, created));
                }
            })
        })
        .collect();

    let writers: Vec<_> = (0..BOARDS * WRITERS)
        .map(|w| {
            let (board, owner) = (boards[w % BOARDS].clone(), owners[w % BOARDS].clone());
            let project = projects[w % 2].id;
            tokio::spawn(async move {
                for i in 0..EACH {
                    board.create_task(&owner, project, new_task(&format!("w{w} t{i}"))).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    for board in &boards {
        board.flush().await.unwrap();
    }
    let newest = boards.iter().map(Board::latest_seq).max().unwrap();
    last.store(newest, Ordering::SeqCst);

    let expected: Vec<u64> = (since + 1..=newest).collect();
    for reader in readers {
        let seen =
            tokio::time::timeout(Duration::from_secs(60), reader).await.expect("a reader ends").unwrap();
        let seqs: Vec<u64> = seen.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, expected, "every event once, in order");
        for (p, project) in projects.iter().enumerate() {
            let mut numbers: Vec<u64> = seen
                .iter()
                .filter_map(|(_, task)| task.as_ref())
                .filter(|task| task["project"]["id"].as_str() == Some(&project.id.to_string()))
                .map(|task| task["number"].as_u64().unwrap())
                .collect();
            numbers.sort_unstable();
            let created = (0..BOARDS * WRITERS).filter(|w| w % 2 == p).count() * EACH;
            assert_eq!(numbers, (1..=created as u64).collect::<Vec<_>>(), "each number of project {p} once");
        }
    }
}

/// A webhook's cursor never passes an event that has committed but that a
/// snapshot cannot read yet: the mark holds it back while a transaction
/// with a lower id runs anywhere in the cluster (docs/storage.md S.49).
/// The sender of the board that did not write it finds nothing to send
/// then, and sends it once the mark has passed. It once moved its cursor
/// to the event counter when it read no event, and skipped the event for
/// good (a test of two servers sharing a cluster with other tests missed
/// one delivery of ten).
#[tokio::test]
async fn a_webhook_delivers_an_event_of_another_board_held_back_by_the_mark() {
    use taskboard_core::api::NewWebhook;
    use taskboard_core::webhooks::WebhookOptions;
    let options = BoardOptions {
        webhooks: WebhookOptions { allow_private: true, ..Default::default() },
        ..Default::default()
    };
    let (fx, b, owner_b, _dir) = two_boards(options).await;
    let p = fx.project("web").await;
    let new = NewWebhook {
        url: "http://127.0.0.1:9/hook".into(),
        events: Some(vec!["task.created".into()]),
        project_id: None,
        description: None,
    };
    let hook = fx.board.create_webhook(&fx.owner, new).await.unwrap().webhook.id;
    let holder = uuid::Uuid::new_v4();
    // The cursor at the newest event, as a sender that keeps up has it.
    while let Some(batch) = fx.board.claim_deliveries(hook, holder).await.unwrap() {
        assert!(batch.items.is_empty(), "no task was created yet");
        fx.board.finish_deliveries(batch, Vec::new()).await.unwrap();
    }

    // A transaction of the cluster with an id, held open: every later
    // commit stays above the mark until it ends.
    let url = format!("postgres://postgres@localhost/postgres?host={}", Scratch::shared().dir().display());
    let (held, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    held.batch_execute("BEGIN; SELECT pg_current_xact_id()").await.unwrap();

    let task = b.create_task(&owner_b, p.id, new_task("from the other board")).await.unwrap();
    if let Some(batch) = fx.board.claim_deliveries(hook, holder).await.unwrap() {
        assert!(batch.items.is_empty(), "nothing is readable yet");
        fx.board.finish_deliveries(batch, Vec::new()).await.unwrap();
    }

    held.batch_execute("COMMIT").await.unwrap();
    let batch = fx.board.claim_deliveries(hook, holder).await.unwrap().expect("the event is due now");
    let keys: Vec<String> = batch
        .items
        .iter()
        .map(|i| serde_json::from_str::<serde_json::Value>(&i.body).unwrap()["data"]["key"].to_string())
        .collect();
    assert_eq!(keys, [format!("{:?}", task.key)], "the task created on the other board, once");
}
