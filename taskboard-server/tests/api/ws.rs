//! `GET /api/v1/ws` over real sockets with a real WebSocket client
//! (DECISIONS 7): recipients, resume, restart, resync, slow consumers,
//! revocation, presence and pings. Events are made through the board of
//! the running server; every wait is for a frame, with a timeout.

use std::collections::HashSet;
use std::time::Duration;

use futures_util::future::join_all;
use futures_util::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use taskboard_core::model::{MemberStatus, Task};
use taskboard_core::{Actor, Board};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use uuid::Uuid;

use crate::support::{TestApp, spawn, spawn_with};

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Longest wait for a frame that must come.
const PATIENCE: Duration = Duration::from_secs(10);

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid request value")
}

fn ws_url(app: &TestApp, token: &str, since: Option<u64>) -> String {
    let base = app.base.replacen("http://", "ws://", 1);
    match since {
        Some(since) => format!("{base}/api/v1/ws?token={token}&since={since}"),
        None => format!("{base}/api/v1/ws?token={token}"),
    }
}

/// Connects and reads the `hello` frame.
async fn connect(app: &TestApp, token: &str, since: Option<u64>) -> (Client, Value) {
    let (mut ws, res) =
        tokio_tungstenite::connect_async(ws_url(app, token, since)).await.expect("the upgrade");
    assert_eq!(res.status(), 101);
    let hello = next_frame(&mut ws).await;
    assert_eq!(hello["type"], "hello", "the first frame is hello: {hello}");
    (ws, hello)
}

/// The next message other than a ping or pong (tungstenite answers pings
/// while reading).
async fn next_message(ws: &mut Client) -> Message {
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.expect("a message in time") {
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(m)) => return m,
            other => panic!("the connection ended: {other:?}"),
        }
    }
}

/// The next text frame, as JSON.
async fn next_frame(ws: &mut Client) -> Value {
    match next_message(ws).await {
        Message::Text(t) => serde_json::from_str(&t).expect("frames are JSON"),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

/// Reads until the close frame; its code.
async fn close_code(ws: &mut Client) -> (u16, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        match next_message(ws).await {
            Message::Text(t) => before.push(serde_json::from_str(&t).unwrap()),
            Message::Close(Some(frame)) => return (frame.code.into(), before),
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

/// Frames up to and including the one with seq `until`.
async fn frames_until(ws: &mut Client, until: u64) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let f = next_frame(ws).await;
        let seq = f["seq"].as_u64().expect("events carry a seq");
        frames.push(f);
        if seq >= until {
            return frames;
        }
    }
}

/// An event every connection sees, made after everything before it: a
/// client that has its frame has every earlier frame meant for it.
async fn marker(board: &Board, owner: &Actor) -> u64 {
    let name = format!("marker-{}", Uuid::new_v4().simple());
    board.create_label(owner, typed(json!({"name": name}))).await.unwrap();
    board.latest_seq()
}

fn seqs(frames: &[Value]) -> Vec<u64> {
    frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect()
}

fn kinds(frames: &[Value]) -> Vec<&str> {
    frames.iter().map(|f| f["type"].as_str().unwrap()).collect()
}

/// The contents of the `message.new` frames.
fn messages(frames: &[Value]) -> HashSet<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "message.new")
        .map(|f| f["data"]["content"].as_str().unwrap().to_string())
        .collect()
}

/// A human who can log in, with its JWT.
async fn human(app: &TestApp, slug: &str) -> (Uuid, String) {
    let m = app.create_member(slug, "human", "member").await;
    let password = format!("{slug}-password");
    let res = app
        .put(&format!("/api/v1/members/{}/password", m.id), app.owner(), json!({"password": password}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let login: Value =
        app.post("/api/v1/auth/login", None, json!({"login": slug, "password": password})).await.expect(200);
    (m.id, login["token"].as_str().unwrap().to_string())
}

async fn agent(app: &TestApp, slug: &str, chat_listen: &str, task_listen: &str) -> (Uuid, String) {
    let m: taskboard_core::model::CreatedMember = app
        .post(
            "/api/v1/members",
            app.owner(),
            json!({"name": slug, "slug": slug, "type": "agent",
                   "agent_config": {"chat_listen": chat_listen, "task_listen": task_listen}}),
        )
        .await
        .expect(201);
    (m.id, m.token.unwrap())
}

#[tokio::test]
async fn the_upgrade_needs_credentials() {
    let app = spawn().await;
    let base = app.base.replacen("http://", "ws://", 1);
    for url in [format!("{base}/api/v1/ws"), format!("{base}/api/v1/ws?token=tbk-not-a-token")] {
        match tokio_tungstenite::connect_async(&url).await {
            Err(tungstenite::Error::Http(res)) => assert_eq!(res.status(), 401, "{url}"),
            other => panic!("{url}: expected a 401 before the upgrade, got {other:?}"),
        }
    }
    // A plain GET (no upgrade headers) with credentials is a 400.
    let res = app.get("/api/v1/ws", app.owner()).await;
    assert_eq!(res.status, 400, "{}", res.body);
    // The header works as well as the query.
    let mut req =
        tungstenite::client::IntoClientRequest::into_client_request(format!("{base}/api/v1/ws")).unwrap();
    req.headers_mut().insert("authorization", format!("Bearer {}", app.owner_token).parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.expect("the upgrade");
    assert_eq!(next_frame(&mut ws).await["type"], "hello");
}

#[tokio::test]
async fn hello_then_every_event_as_one_frame_and_client_pings_are_answered() {
    let app = spawn().await;
    let board = app.board();
    let owner = board.actor(app.owner_id).await.unwrap();
    let latest = board.latest_seq();
    let (mut ws, hello) = connect(&app, &app.owner_token, None).await;
    assert_eq!(hello, json!({"type": "hello", "seq": latest, "data": {"member_id": app.owner_id}}));

    let project = app.create_project(app.owner(), "web").await;
    let task = app.create_task(app.owner(), project.id, "First").await;
    let until = marker(board, &owner).await;
    let frames = frames_until(&mut ws, until).await;
    let s = seqs(&frames);
    assert!(s.windows(2).all(|w| w[0] < w[1]), "seqs increase: {s:?}");
    for f in &frames {
        let keys: HashSet<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, HashSet::from(["type", "seq", "ts", "data"]), "{f}");
        assert!(f["ts"].as_str().unwrap().parse::<jiff::Timestamp>().is_ok(), "{f}");
    }
    let created = frames.iter().find(|f| f["type"] == "task.created").expect("task.created");
    let data: Task = serde_json::from_value(created["data"].clone()).expect("task.created carries a Task");
    assert_eq!(data.id, task.id);
    assert!(frames.iter().any(|f| f["type"] == "project.created" && f["data"]["id"] == json!(project.id)));

    ws.send(Message::Ping(b"are you there".to_vec().into())).await.unwrap();
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap() {
            Some(Ok(Message::Pong(p))) => break assert_eq!(&p[..], b"are you there"),
            Some(Ok(Message::Ping(_))) => {}
            other => panic!("expected the pong, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn each_event_reaches_its_recipients_only() {
    let app = spawn().await;
    let board = app.board();
    let owner = board.actor(app.owner_id).await.unwrap();
    let (_, outsider_token) = human(&app, "outsider").await;
    let (listener, listener_token) = agent(&app, "listener", "all", "all").await;
    let (picky, picky_token) = agent(&app, "picky", "mentions", "mentions").await;
    let project = app.create_project(app.owner(), "web").await;
    for m in [listener, picky] {
        board.add_project_member(&owner, project.id, m).await.unwrap();
    }
    let chat = project.chat_id.unwrap();
    // Watcher: the owner (creator); assignee: listener; reviewer: picky.
    let task = board
        .create_task(
            &owner,
            project.id,
            typed(json!({"title": "Review me", "assignee_id": listener, "reviewer_id": picky})),
        )
        .await
        .unwrap();

    let mut clients = Vec::new();
    for token in [&app.owner_token, &outsider_token, &listener_token, &picky_token] {
        clients.push(connect(&app, token, None).await.0);
    }
    let post = |body: Value| {
        let owner = &owner;
        async move { board.post_message(owner, typed(body)).await.unwrap() }
    };
    post(json!({"chat_id": chat, "content": "c1 plain"})).await;
    post(json!({"chat_id": chat, "content": "c2 for @picky"})).await;
    post(json!({"task_id": task.id, "content": "t1 plain"})).await;
    post(json!({"task_id": task.id, "content": "t2 for @outsider and @picky"})).await;
    // Switching the listener to mentions takes effect at once.
    board
        .update_member(&owner, listener, typed(json!({"agent_config": {"chat_listen": "mentions"}})))
        .await
        .unwrap();
    post(json!({"chat_id": chat, "content": "c3 after the switch"})).await;
    board.update_task(&owner, task.id, typed(json!({"title": "Reviewed"}))).await.unwrap();
    let until = marker(board, &owner).await;

    let mut seen = Vec::new();
    for ws in &mut clients {
        seen.push(frames_until(ws, until).await);
    }
    let [owner_f, outsider_f, listener_f, picky_f] = &seen[..] else { unreachable!() };
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
    assert_eq!(
        messages(owner_f),
        set(&["c1 plain", "c2 for @picky", "t1 plain", "t2 for @outsider and @picky", "c3 after the switch"])
    );
    // Not in the project, not involved in the task: only where mentioned.
    assert_eq!(messages(outsider_f), set(&["t2 for @outsider and @picky"]));
    // Assignee with task_listen all; chat_listen all until the switch.
    assert_eq!(
        messages(listener_f),
        set(&["c1 plain", "c2 for @picky", "t1 plain", "t2 for @outsider and @picky"])
    );
    // Reviewer, but listening for mentions only, in chat and on tasks.
    assert_eq!(messages(picky_f), set(&["c2 for @picky", "t2 for @outsider and @picky"]));

    let config_updates = |frames: &[Value]| frames.iter().filter(|f| f["type"] == "config.updated").count();
    assert_eq!(config_updates(listener_f), 1, "config.updated reaches the agent concerned");
    let update = listener_f.iter().find(|f| f["type"] == "config.updated").unwrap();
    assert_eq!(update["data"]["member_id"], json!(listener));
    assert_eq!(update["data"]["agent_config"]["chat_listen"], "mentions");
    for frames in [owner_f, outsider_f, picky_f] {
        assert_eq!(config_updates(frames), 0, "config.updated goes to that agent only");
    }
    // Everything else goes to everyone.
    for frames in &seen {
        let k = kinds(frames);
        for kind in ["member.updated", "task.updated", "label.created"] {
            assert!(k.contains(&kind), "{kind} missing in {k:?}");
        }
        // The last one to connect came online after every subscription.
        assert!(frames.iter().any(|f| f["type"] == "agent.status" && f["data"]["member_id"] == json!(picky)));
    }
}

#[tokio::test]
async fn resuming_after_a_disconnect_mid_burst_delivers_each_event_once_in_order() {
    let app = spawn().await;
    let board = app.board().clone();
    let (bot, _) = agent(&app, "bot", "all", "all").await;
    let bot = board.actor(bot).await.unwrap();
    let (mut ws, hello) = connect(&app, &app.owner_token, None).await;
    let start = hello["seq"].as_u64().unwrap();

    let burst = tokio::spawn({
        let (board, bot) = (board.clone(), bot.clone());
        async move {
            let statuses = (0..1000).map(|i| {
                let status = if i % 2 == 0 { MemberStatus::Busy } else { MemberStatus::Online };
                let (board, bot) = (board.clone(), bot.clone());
                async move { board.set_status(&bot, status).await.unwrap() }
            });
            join_all(statuses).await;
        }
    });
    let mut got = Vec::new();
    while got.len() < 300 {
        got.push(next_frame(&mut ws).await);
    }
    drop(ws);
    let last = got.last().unwrap()["seq"].as_u64().unwrap();
    burst.await.unwrap();
    let end = board.latest_seq();
    assert!(end >= start + 1000);

    let (mut ws, _) = connect(&app, &app.owner_token, Some(last)).await;
    got.extend(frames_until(&mut ws, end).await);
    assert_eq!(seqs(&got), (start + 1..=end).collect::<Vec<_>>(), "every event once, in order");
    let statuses =
        got.iter().filter(|f| f["type"] == "agent.status" && f["data"]["member_id"] == json!(bot.id()));
    assert_eq!(statuses.count(), 1000);
}

#[tokio::test]
async fn resuming_across_a_restart_continues_the_numbering() {
    let app = spawn().await;
    let owner = app.board().actor(app.owner_id).await.unwrap();
    let (mut ws, _) = connect(&app, &app.owner_token, None).await;
    let until = marker(app.board(), &owner).await;
    let before = frames_until(&mut ws, until).await;
    let last = *seqs(&before).last().unwrap();

    // Shutdown closes the stream with 1001; the reader answers the close.
    let closing = tokio::spawn(async move { close_code(&mut ws).await });
    let app = app.restart().await;
    let (code, frames) = closing.await.unwrap();
    assert_eq!(code, u16::from(CloseCode::Away));
    assert!(frames.is_empty(), "nothing after the marker: {frames:?}");

    let owner = app.board().actor(app.owner_id).await.unwrap();
    let first_after = marker(app.board(), &owner).await;
    assert!(first_after > last, "seq keeps growing across restarts");
    let until = marker(app.board(), &owner).await;
    let (mut ws, _) = connect(&app, &app.owner_token, Some(last)).await;
    let after = frames_until(&mut ws, until).await;
    assert_eq!(seqs(&after), (last + 1..=until).collect::<Vec<_>>());
    // The owner's own disconnection at shutdown was kept for it.
    assert!(after.iter().any(|f| f["type"] == "agent.status" && f["data"]["status"] == "offline"));
    assert_eq!(after.iter().filter(|f| f["type"] == "label.created").count(), 2);
}

#[tokio::test]
async fn a_since_older_than_the_retained_window_needs_a_resync() {
    let app = spawn().await;
    let board = app.board();
    let (bot, _) = agent(&app, "bot", "all", "all").await;
    let bot = board.actor(bot).await.unwrap();
    let owner = board.actor(app.owner_id).await.unwrap();
    // A since beyond the newest event is from a state this board never had.
    let ahead = board.latest_seq() + 100;
    let (mut ws, _) = connect(&app, &app.owner_token, Some(ahead)).await;
    assert_eq!(next_frame(&mut ws).await, json!({"type": "resync_required"}));
    // Live goes on from the present, not from that future seq.
    let until = marker(board, &owner).await;
    assert!(until < ahead);
    assert_eq!(frames_until(&mut ws, until).await.last().unwrap()["type"], "label.created");
    drop(ws);

    // Push event 1 out of the retained window.
    while board.latest_seq() <= taskboard_core::events::RETAINED_EVENTS as u64 + 1 {
        let statuses = (0..500).map(|i| {
            let status = if i % 2 == 0 { MemberStatus::Busy } else { MemberStatus::Online };
            board.set_status(&bot, status)
        });
        for r in join_all(statuses).await {
            r.unwrap();
        }
    }
    let (mut ws, hello) = connect(&app, &app.owner_token, Some(0)).await;
    assert_eq!(next_frame(&mut ws).await, json!({"type": "resync_required"}));
    // Then live, without the window.
    let until = marker(board, &owner).await;
    let frames = frames_until(&mut ws, until).await;
    assert!(seqs(&frames).iter().all(|s| *s > hello["seq"].as_u64().unwrap()), "no replay after a resync");

    // A since inside the window replays.
    let since = until - 5;
    let (mut ws, _) = connect(&app, &app.owner_token, Some(since)).await;
    assert_eq!(seqs(&frames_until(&mut ws, until).await), (since + 1..=until).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_client_that_does_not_read_is_closed_with_4008_and_others_are_not_slowed() {
    let app = spawn_with(|c| c.event_buffer = 16).await;
    let board = app.board();
    let owner = board.actor(app.owner_id).await.unwrap();
    let project = app.create_project(app.owner(), "web").await;
    let task = app.create_task(app.owner(), project.id, "Big").await;

    // The slow client's receive buffer is tiny, so the server's writes
    // stall after a few frames instead of filling megabytes of kernel
    // buffers.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(app.base.trim_start_matches("http://").parse().unwrap()).await.unwrap();
    let (mut slow, _) =
        tokio_tungstenite::client_async(ws_url(&app, &app.owner_token, None), MaybeTlsStream::Plain(stream))
            .await
            .expect("the upgrade");
    let hello = next_frame(&mut slow).await;
    let start = hello["seq"].as_u64().unwrap();

    // A client that reads along gets everything.
    let (mut fast, _) = connect(&app, &app.owner_token, None).await;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<u64>();
    let fast_reader = tokio::spawn(async move {
        let mut frames = Vec::new();
        let mut done_rx = done_rx;
        let mut until = u64::MAX;
        loop {
            tokio::select! {
                f = next_frame(&mut fast) => {
                    let seq = f["seq"].as_u64().unwrap();
                    frames.push(f);
                    if seq >= until {
                        return frames;
                    }
                }
                Ok(u) = &mut done_rx, if until == u64::MAX => {
                    if frames.last().is_some_and(|f| f["seq"].as_u64().unwrap() >= u) {
                        return frames;
                    }
                    until = u;
                }
            }
        }
    });
    // 100 updates of 100 kB each: far more than the ring of 16 events and
    // the socket buffers hold.
    for i in 0..100 {
        let description = format!("{i:03}{}", "x".repeat(100_000 - 3));
        board.update_task(&owner, task.id, typed(json!({"description": description}))).await.unwrap();
    }
    let until = marker(board, &owner).await;
    done_tx.send(until).unwrap();
    let fast_frames = fast_reader.await.unwrap();
    assert_eq!(fast_frames.iter().filter(|f| f["type"] == "task.updated").count(), 100);

    // The slow client reads again: a gapless prefix, then 4008.
    let (code, prefix) = close_code(&mut slow).await;
    assert_eq!(code, taskboard_server::ws::CLOSE_TOO_SLOW);
    let got = seqs(&prefix);
    assert!(got.len() < 100, "it was cut off before the end ({} frames)", got.len());
    let last = got.last().copied().unwrap_or(start);
    assert_eq!(got, (start + 1..=last).collect::<Vec<_>>(), "no event lost silently before the close");

    // It resumes with since and gets the rest.
    let (mut again, _) = connect(&app, &app.owner_token, Some(last)).await;
    let rest = frames_until(&mut again, until).await;
    assert_eq!(seqs(&rest), (last + 1..=until).collect::<Vec<_>>());
}

#[tokio::test]
async fn revoking_a_token_or_deleting_a_member_closes_its_connections() {
    let app = spawn().await;
    let board = app.board();
    let owner = board.actor(app.owner_id).await.unwrap();
    let (bot, bot_token) = agent(&app, "bot", "all", "all").await;
    let (_, other_token) = agent(&app, "other", "all", "all").await;
    let (person, person_token) = human(&app, "person").await;
    let (mut bot_ws, _) = connect(&app, &bot_token, None).await;
    let (mut bot_ws2, _) = connect(&app, &bot_token, None).await;
    let (mut other_ws, _) = connect(&app, &other_token, None).await;
    let (mut person_ws, _) = connect(&app, &person_token, None).await;

    board.regenerate_token(&owner, bot).await.unwrap();
    for ws in [&mut bot_ws, &mut bot_ws2] {
        let (code, frames) = close_code(ws).await;
        assert_eq!(code, taskboard_server::ws::CLOSE_REVOKED);
        assert_eq!(frames.last().unwrap()["type"], "member.token_revoked", "the reason comes first");
    }
    match tokio_tungstenite::connect_async(ws_url(&app, &bot_token, None)).await {
        Err(tungstenite::Error::Http(res)) => assert_eq!(res.status(), 401),
        other => panic!("the old token must fail: {other:?}"),
    }

    board.delete_member(&owner, person).await.unwrap();
    let (code, frames) = close_code(&mut person_ws).await;
    assert_eq!(code, taskboard_server::ws::CLOSE_REVOKED);
    assert_eq!(frames.last().unwrap()["type"], "member.deleted");

    // Another member's stream goes on, and never saw the bot's
    // credential event.
    let until = marker(board, &owner).await;
    let frames = frames_until(&mut other_ws, until).await;
    assert!(frames.iter().any(|f| f["type"] == "member.deleted" && f["data"]["id"] == json!(person)));
    assert!(!frames.iter().any(|f| f["type"] == "member.token_revoked"));
}

#[tokio::test]
async fn the_first_connection_sets_online_and_the_last_sets_offline() {
    let app = spawn().await;
    let board = app.board();
    let owner = board.actor(app.owner_id).await.unwrap();
    let (bot, bot_token) = agent(&app, "bot", "all", "all").await;
    let (mut observer, _) = connect(&app, &app.owner_token, None).await;
    let is_bot_status = |f: &Value, status: &str| {
        f["type"] == "agent.status" && f["data"] == json!({"member_id": bot, "status": status})
    };

    let (mut first, _) = connect(&app, &bot_token, None).await;
    let (mut second, _) = connect(&app, &bot_token, None).await;
    let until = marker(board, &owner).await;
    let frames = frames_until(&mut observer, until).await;
    assert_eq!(frames.iter().filter(|f| is_bot_status(f, "online")).count(), 1, "only the first connection");

    first.close(None).await.unwrap();
    // The closing handshake completes: the server has answered.
    while let Ok(Some(Ok(_))) = tokio::time::timeout(PATIENCE, first.next()).await {}
    let until = marker(board, &owner).await;
    let frames = frames_until(&mut observer, until).await;
    assert!(!frames.iter().any(|f| is_bot_status(f, "offline")), "one connection is still open");

    second.close(None).await.unwrap();
    loop {
        if is_bot_status(&next_frame(&mut observer).await, "offline") {
            break;
        }
    }
    let m = board.get_member(bot).await.unwrap();
    assert_eq!(m.status, MemberStatus::Offline);
}

/// The server binary with a 100 ms ping interval, in its own process:
/// the interval is read from the environment once per process.
#[tokio::test]
async fn the_server_pings_and_drops_a_peer_that_never_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Child(
        std::process::Command::new(env!("CARGO_BIN_EXE_taskboard-server"))
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .env(taskboard_server::ws::PING_INTERVAL_ENV, "100")
            .env("TASKBOARD_OWNER_PASSWORD", "owner-password-1")
            .env("TASKBOARD_LOG_LEVEL", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server binary starts"),
    );
    let stdout = child.0.stdout.take().unwrap();
    // The start-up banner comes first; the address is on the last line.
    let base = tokio::task::spawn_blocking(move || {
        std::io::BufRead::lines(std::io::BufReader::new(stdout))
            .map_while(Result::ok)
            .find_map(|line| line.split("listening on ").nth(1).map(|a| a.trim().to_string()))
    })
    .await
    .unwrap()
    .expect("the listening line");
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let login: Value = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"login": "owner", "password": "owner-password-1"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let owner_token = login["token"].as_str().unwrap();
    let created: Value = http
        .post(format!("{base}/api/v1/members"))
        .bearer_auth(owner_token)
        .json(&json!({"name": "Mute", "slug": "mute"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ws_base = base.replacen("http://", "ws://", 1);
    let (mut observer, _) =
        tokio_tungstenite::connect_async(format!("{ws_base}/api/v1/ws?token={owner_token}")).await.unwrap();
    let (mut mute, _) = tokio_tungstenite::connect_async(format!(
        "{ws_base}/api/v1/ws?token={}",
        created["token"].as_str().unwrap()
    ))
    .await
    .unwrap();
    assert!(matches!(mute.next().await, Some(Ok(Message::Text(_)))), "hello");
    // From here `mute` reads nothing, so it answers no ping.

    let mut pinged = false;
    loop {
        let frame = match tokio::time::timeout(PATIENCE, observer.next()).await.expect("a frame in time") {
            Some(Ok(Message::Ping(_))) => {
                pinged = true;
                continue;
            }
            Some(Ok(Message::Text(t))) => serde_json::from_str::<Value>(&t).unwrap(),
            other => panic!("the observer's stream ended: {other:?}"),
        };
        if frame["type"] == "agent.status"
            && frame["data"] == json!({"member_id": created["id"], "status": "offline"})
        {
            break;
        }
    }
    assert!(pinged, "the observer was pinged (and answered, so it is still here)");
    // The dropped peer gets the pings that were queued, then the end.
    let mut saw_ping = false;
    while let Ok(Some(Ok(m))) = tokio::time::timeout(PATIENCE, mute.next()).await {
        saw_ping |= m.is_ping();
    }
    assert!(saw_ping);
}

/// Kills the server process however the test ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Streams opened with an access token end when it expires: the
/// WebSocket closes (4001, "credentials expired") and the Server-Sent
/// Events response ends; neither carries an event made after the expiry
/// (docs/decisions.md, 20.d).
#[tokio::test]
async fn streams_opened_with_an_access_token_end_when_it_expires() {
    let app = spawn().await;
    let board = app.board();
    let owner = board.actor(app.owner_id).await.unwrap();
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1500);
    let short = taskboard_core::tokens::NewAccessToken {
        name: "short".into(),
        scopes: vec![taskboard_core::model::Scope::Read],
        project_ids: None,
        expires_at: Some(at),
    };
    let short = board.create_access_token(&owner, app.owner_id, short).await.unwrap();
    let (mut ws, _) = connect(&app, &short.token, None).await;
    taskboard_core::tls::install_provider();
    let sse = reqwest::Client::new()
        .get(format!("{}/api/v1/events", app.base))
        .bearer_auth(&short.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let (code, _) = close_code(&mut ws).await;
    assert_eq!(code, taskboard_server::ws::CLOSE_REVOKED);
    let after = marker(board, &owner).await;
    let body = tokio::time::timeout(PATIENCE, sse.text()).await.expect("the SSE response ends").unwrap();
    assert!(!body.contains(&format!("id: {after}\n")), "an event after the expiry was sent: {body}");
    match tokio_tungstenite::connect_async(ws_url(&app, &short.token, None)).await {
        Err(tungstenite::Error::Http(res)) => assert_eq!(res.status(), 401),
        other => panic!("the expired token must fail: {other:?}"),
    }
}
