//! The sender of webhook deliveries: claims due deliveries through the
//! board, POSTs them and records the outcomes there (the queue, its rules
//! and the retry schedule live in `taskboard_core::webhooks` and the
//! board). Only the HTTP is here.
//!
//! One task follows the event log: it has the board queue the deliveries
//! of new events, then starts a worker for each webhook with deliveries
//! due and none running, and sleeps until the next event, the next due
//! time or a worker's end. A worker claims a batch of its webhook's due
//! deliveries and attempts them one after another in seq order, so a
//! slow or dead receiver only ever holds up its own worker. Attempts of
//! all workers together are bounded by a semaphore.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use taskboard_core::Board;
use taskboard_core::webhooks::{AddressRule, ClaimedDelivery, Outcome, sign};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

/// Attempts in flight at once, over every webhook.
const CONCURRENT_ATTEMPTS: usize = 64;
/// Bytes of a receiver's answer read (and dropped) so the connection can
/// be used again; a longer answer closes it.
const ANSWER_BYTES: usize = 64 * 1024;
/// The longest sleep between two looks at the queue, in case a wake-up
/// was missed (a claim that ended, another process's queue).
const IDLE_LOOK: Duration = Duration::from_secs(30);

struct Sender {
    board: Board,
    client: reqwest::Client,
    rule: AddressRule,
    permits: Semaphore,
}

/// Starts the sender; it stops when `shutdown` is cancelled, once every
/// worker has handed its unfinished claims back to the queue.
pub(crate) fn spawn(
    board: Board,
    shutdown: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, reqwest::Error> {
    let options = board.options().webhooks.clone();
    let rule = AddressRule { allow_private: options.allow_private };
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(options.policy.timeout)
        .connect_timeout(options.policy.timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .dns_resolver(Arc::new(PublicResolver { rule }))
        .user_agent(concat!("Taskboard-Webhooks/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let sender = Arc::new(Sender { board, client, rule, permits: Semaphore::new(CONCURRENT_ATTEMPTS) });
    Ok(tokio::spawn(follow(sender, shutdown)))
}

async fn follow(sender: Arc<Sender>, shutdown: CancellationToken) {
    let board = sender.board.clone();
    let mut seq = board.watch_seq();
    let workers = TaskTracker::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Uuid>();
    let mut running = HashSet::new();
    loop {
        seq.borrow_and_update();
        // One read when the board has no active webhook, which is most
        // boards most of the time.
        let idle = matches!(board.webhook_schedule().await, Ok(s) if s.is_empty()) && running.is_empty();
        loop {
            if idle {
                break;
            }
            match board.queue_webhook_deliveries().await {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    tracing::warn!(%e, "queuing webhook deliveries failed");
                    break;
                }
            }
        }
        let mut wake = IDLE_LOOK;
        let schedule = if idle { Ok(Vec::new()) } else { board.webhook_schedule().await };
        match schedule {
            Ok(schedule) => {
                let now = Timestamp::now();
                for (id, due) in schedule {
                    let Some(due) = due else { continue };
                    if running.contains(&id) {
                        continue;
                    }
                    let wait = now.duration_until(due);
                    if wait.is_positive() {
                        wake = wake.min(wait.unsigned_abs());
                        continue;
                    }
                    running.insert(id);
                    let (sender, done, stop) = (sender.clone(), done_tx.clone(), shutdown.clone());
                    workers.spawn(async move {
                        work(&sender, id, &stop).await;
                        let _ = done.send(id);
                    });
                }
            }
            Err(e) => tracing::warn!(%e, "reading the webhook queue failed"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            changed = seq.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            Some(id) = done_rx.recv() => {
                running.remove(&id);
            }
            _ = tokio::time::sleep(wake) => {}
        }
    }
    workers.close();
    workers.wait().await;
}

/// Attempts the due deliveries of one webhook until none is due. On
/// shutdown the unattempted rest of a claim goes back to the queue.
async fn work(sender: &Sender, webhook: Uuid, shutdown: &CancellationToken) {
    let board = &sender.board;
    loop {
        let claims = match board.claim_deliveries(webhook).await {
            Ok(claims) if claims.is_empty() => return,
            Ok(claims) => claims,
            Err(e) => {
                tracing::warn!(%e, %webhook, "claiming deliveries failed");
                return;
            }
        };
        let mut outcomes = Vec::with_capacity(claims.len());
        let mut rest = claims.into_iter();
        for claim in rest.by_ref() {
            let outcome = tokio::select! {
                outcome = sender.attempt(&claim) => outcome,
                _ = shutdown.cancelled() => {
                    let mut back = vec![claim];
                    back.extend(rest.by_ref());
                    if let Err(e) = board.release_deliveries(back).await {
                        tracing::warn!(%e, %webhook, "handing back claimed deliveries failed");
                    }
                    break;
                }
            };
            outcomes.push((claim, outcome));
        }
        let stopping = shutdown.is_cancelled();
        if let Err(e) = board.finish_deliveries(outcomes).await {
            tracing::warn!(%e, %webhook, "recording delivery outcomes failed");
            return;
        }
        if stopping {
            return;
        }
    }
}

impl Sender {
    async fn attempt(&self, c: &ClaimedDelivery) -> Outcome {
        let _permit = self.permits.acquire().await;
        let url = match reqwest::Url::parse(&c.url) {
            Ok(url) => url,
            Err(e) => return Outcome::Unreachable { error: format!("bad URL: {e}") },
        };
        // Names are checked by the resolver; addresses written in the URL
        // never reach it.
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(ip) = literal
            && let Err(e) = self.rule.check(ip)
        {
            return Outcome::Unreachable { error: format!("refused: {e}") };
        }
        let id = c.id.to_string();
        let timestamp = Timestamp::now().as_second();
        let signature = match sign(&c.secret, &id, timestamp, c.body.as_bytes()) {
            Ok(s) => s,
            Err(e) => return Outcome::Unreachable { error: e.to_string() },
        };
        let sent = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(c.body.clone())
            .send()
            .await;
        match sent {
            Ok(mut answer) => {
                let status = answer.status();
                let mut read = 0;
                while read < ANSWER_BYTES {
                    match answer.chunk().await {
                        Ok(Some(chunk)) => read += chunk.len(),
                        _ => break,
                    }
                }
                if status.is_success() {
                    Outcome::Delivered { status: status.as_u16() }
                } else {
                    Outcome::Refused { status: status.as_u16() }
                }
            }
            Err(e) => Outcome::Unreachable { error: describe(&e) },
        }
    }
}

/// A reqwest error with its causes, which hold the useful part.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "no answer within the timeout".to_string();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Resolves names for the sender and keeps only the addresses deliveries
/// may go to, so a name that resolves to a private address when it is
/// attempted is refused however it resolved when the webhook was made.
struct PublicResolver {
    rule: AddressRule,
}

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rule = self.rule;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match rule.check(a.ip()) {
                    Ok(()) => true,
                    Err(e) => {
                        refused.get_or_insert(e);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let why = refused.unwrap_or_else(|| "no address".to_string());
                return Err(format!("{host} refused: {why}").into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
