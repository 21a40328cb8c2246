//! SIGKILL of one of three processes during a write load spread over the
//! three: every write acknowledged (by any process, the killed one
//! included) is on the board afterwards, and the other two keep serving.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::support::*;

/// Writers per process.
const WRITERS: usize = 8;
/// Acknowledged creations before the kill.
const BEFORE_KILL: usize = 60;
/// Acknowledged creations of each surviving process after the kill.
const AFTER_KILL: usize = 20;

#[tokio::test]
async fn kill_9_of_one_of_three_processes_loses_no_acknowledged_write() {
    let mut c = Cluster::start().await;
    let p = c.project("web").await;
    let acked: Arc<Mutex<Vec<String>>> = Default::default();
    // Acknowledgements per process, as a channel the test waits on.
    let (counts, mut seen) = watch::channel([0usize; 3]);
    let counts = Arc::new(counts);
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3 * WRITERS {
        let proc = w % 3;
        let (http, url, token) =
            (c.http.clone(), format!("{}/api/v1/tasks?project_id={p}", c.base(proc)), c.owner.clone());
        let (acked, counts, stop) = (acked.clone(), counts.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            for n in 0.. {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let title = format!("w{w}-{n}");
                let res = http.post(&url).bearer_auth(&token).json(&json!({"title": title})).send().await;
                match res {
                    Ok(res) if res.status() == 201 => {
                        // Acknowledged only once the whole answer is read.
                        let task: Value = match res.json().await {
                            Ok(task) => task,
                            Err(_) if proc == 2 => return,
                            Err(e) => panic!("process {proc}: {e}"),
                        };
                        assert_eq!(task["title"], json!(title));
                        acked.lock().unwrap().push(title);
                        counts.send_modify(|c| c[proc] += 1);
                    }
                    // The killed process: the write was not acknowledged.
                    _ if proc == 2 => return,
                    Ok(res) => panic!("process {proc}: {} {}", res.status(), res.text().await.unwrap()),
                    Err(e) => panic!("process {proc}: {e}"),
                }
            }
        }));
    }
    let at_kill = *seen.wait_for(|c| c.iter().sum::<usize>() >= BEFORE_KILL && c[2] > 0).await.unwrap();
    c.procs[2].kill();
    seen.wait_for(|c| c[0] >= at_kill[0] + AFTER_KILL && c[1] >= at_kill[1] + AFTER_KILL).await.unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }

    let acked: HashSet<String> = acked.lock().unwrap().iter().cloned().collect();
    for i in 0..2 {
        let tasks = c.ok(i, Method::GET, &format!("/api/v1/tasks?project_id={p}"), None).await;
        let tasks = tasks.as_array().unwrap();
        let titles: HashSet<String> =
            tasks.iter().map(|t| t["title"].as_str().unwrap().to_string()).collect();
        let missing: Vec<_> = acked.difference(&titles).collect();
        assert!(missing.is_empty(), "acknowledged but missing on process {i}: {missing:?}");
        let numbers: HashSet<u64> = tasks.iter().map(|t| t["number"].as_u64().unwrap()).collect();
        assert_eq!(numbers.len(), tasks.len(), "task numbers are unique");
    }
}
