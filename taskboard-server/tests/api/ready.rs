//! `GET /ready` reads the store and answers 503 with a detail when it
//! cannot; `GET /health` stays liveness and answers throughout.

use taskboard_pg_scratch::Scratch;

use crate::support::{on_postgres, spawn, spawn_with};

#[tokio::test]
async fn ready_answers_503_while_the_data_directory_is_gone_and_200_once_it_is_back() {
    if on_postgres() {
        return; // the PostgreSQL variant stops its cluster instead (below)
    }
    let app = spawn().await;
    let ready = app.get("/ready", None).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.body["status"], "ready");

    // The store's file and the file contents moved away under the running
    // server: it still answers from its open handle, but is not ready.
    let data = app.data_dir().to_path_buf();
    let moved = data.with_extension("moved");
    std::fs::rename(&data, &moved).unwrap();
    app.get("/ready", None).await.error(503, "unavailable", "board.redb");
    assert_eq!(app.get("/health", None).await.status, 200, "liveness reads nothing");

    std::fs::rename(&moved, &data).unwrap();
    assert_eq!(app.get("/ready", None).await.status, 200);
}

#[tokio::test]
async fn ready_answers_503_while_postgres_is_stopped_and_200_once_it_runs_again() {
    if !on_postgres() {
        return;
    }
    // A cluster of this test's own, as stopping the shared one would fail
    // the tests running beside it.
    let cluster = Scratch::start().expect("a throwaway PostgreSQL");
    let url = cluster.fresh_url();
    let app = spawn_with(|c| c.database = Some(url)).await;
    assert_eq!(app.get("/ready", None).await.status, 200);

    cluster.pause().unwrap();
    app.get("/ready", None).await.error(503, "unavailable", "the postgres store cannot be read");
    assert_eq!(app.get("/health", None).await.status, 200, "liveness reads nothing");

    cluster.resume().unwrap();
    let ready = app.get("/ready", None).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
}
