//! A webhook receiver for tests: a small hyper server on 127.0.0.1 port
//! 0 that records every request and answers as the test says.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How the receiver answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    /// Never answers (the sender's timeout ends the attempt).
    Hang,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
    pub answer: Answer,
}

impl Received {
    pub fn id(&self) -> &str {
        self.headers["webhook-id"].to_str().unwrap()
    }
    pub fn frame(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    pub fn seq(&self) -> u64 {
        self.frame()["seq"].as_u64().unwrap()
    }
    pub fn kind(&self) -> String {
        self.frame()["type"].as_str().unwrap().to_string()
    }
    pub fn delivered(&self) -> bool {
        matches!(self.answer, Answer::Status(s) if (200..300).contains(&s))
    }
}

/// A delivery the receiver keeps failing, whatever else it answers.
#[derive(Debug, Clone)]
enum Failing {
    /// The first request's `webhook-id`, once it comes, with this status.
    First(u16),
    Id(String, u16),
}

#[derive(Default)]
struct State {
    received: Mutex<Vec<Received>>,
    failing: Mutex<Option<Failing>>,
    /// Answers for the next requests, then `usual`.
    script: Mutex<VecDeque<Answer>>,
    usual: Mutex<Option<Answer>>,
    changed: Notify,
}

/// A running receiver.
pub struct Receiver {
    pub url: String,
    pub port: u16,
    state: Arc<State>,
}

impl Receiver {
    /// A receiver that answers 200 unless told otherwise.
    pub async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let state = state.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                                let id = parts
                                    .headers
                                    .get("webhook-id")
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or_default()
                                    .to_string();
                                let failed = {
                                    let mut failing = state.failing.lock().unwrap();
                                    match failing.clone() {
                                        Some(Failing::First(status)) => {
                                            *failing = Some(Failing::Id(id, status));
                                            Some(Answer::Status(status))
                                        }
                                        Some(Failing::Id(held, status)) if held == id => {
                                            Some(Answer::Status(status))
                                        }
                                        _ => None,
                                    }
                                };
                                let answer = failed
                                    .or_else(|| state.script.lock().unwrap().pop_front())
                                    .or(*state.usual.lock().unwrap())
                                    .unwrap_or(Answer::Status(200));
                                state.received.lock().unwrap().push(Received {
                                    headers: parts.headers,
                                    body,
                                    answer,
                                });
                                state.changed.notify_waiters();
                                match answer {
                                    Answer::Status(s) => {
                                        let mut res =
                                            hyper::Response::new(Full::new(Bytes::from_static(b"ok")));
                                        *res.status_mut() = hyper::StatusCode::from_u16(s).unwrap();
                                        Ok::<_, Infallible>(res)
                                    }
                                    Answer::Hang => std::future::pending().await,
                                }
                            }
                        });
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        Receiver { url: format!("http://127.0.0.1:{port}/hook"), port, state }
    }

    /// Answers every later request so (after the script).
    pub fn answer(&self, answer: Answer) {
        *self.state.usual.lock().unwrap() = Some(answer);
    }

    /// Answers the next requests so, in order.
    pub fn script(&self, answers: &[Answer]) {
        self.state.script.lock().unwrap().extend(answers.iter().copied());
    }

    /// Answers every attempt of the first delivery it gets (by its
    /// `webhook-id`) with `status`, until [`Receiver::recover`].
    pub fn fail_first(&self, status: u16) {
        *self.state.failing.lock().unwrap() = Some(Failing::First(status));
    }

    /// Stops failing the delivery of [`Receiver::fail_first`].
    pub fn recover(&self) {
        *self.state.failing.lock().unwrap() = None;
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// The first request answered with a 2xx of each `webhook-id`, in the
    /// order they came.
    pub fn delivered(&self) -> Vec<Received> {
        let mut seen = std::collections::HashSet::new();
        self.received().into_iter().filter(|r| r.delivered() && seen.insert(r.id().to_string())).collect()
    }

    /// Waits until `done` holds for what was received; fails the test
    /// after a minute.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let wait = async {
            loop {
                let changed = self.state.changed.notified();
                let received = self.received();
                if done(&received) {
                    return received;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .unwrap_or_else(|_| panic!("the receiver never got {what}; it got {:#?}", self.received()))
    }

    /// Waits until `n` distinct deliveries were answered with a 2xx.
    pub async fn wait_delivered(&self, n: usize) -> Vec<Received> {
        self.wait_until(&format!("{n} deliveries"), |_| self.delivered().len() >= n).await;
        self.delivered()
    }
}
