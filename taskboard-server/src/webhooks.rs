//! The sender of webhook deliveries: claims webhooks through the board,
//! POSTs the events it reads for them and records the progress there
//! (the state, its rules and the retry schedule live in
//! `taskboard_core::webhooks` and the board). Only the HTTP is here.
//!
//! One task follows the event log: it starts a worker for each webhook
//! with work due and none running, and sleeps until the next event, the
//! next due time, a wake-up from the board (a redelivery) or a worker's
//! end. A worker claims its webhook and sends a batch one attempt after
//! another: the retries due, then first attempts in seq order (one that
//! does not get through is retried on its own schedule and holds back no
//! later event), then records the batch in one write, and goes on while
//! work is due. A slow or dead receiver only ever holds up its own
//! worker. Attempts of all workers together are bounded by a semaphore.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use taskboard_core::Board;
use taskboard_core::webhooks::{AddressRule, DeliveryBatch, DeliveryItem, Outcome, signatures};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

/// Attempts in flight at once, over every webhook.
const CONCURRENT_ATTEMPTS: usize = 64;
/// Bytes of a receiver's answer read (and dropped) so the connection can
/// be used again; a longer answer closes it.
const ANSWER_BYTES: usize = 64 * 1024;
/// The longest sleep between two looks at the schedule, in case a
/// wake-up was missed (a claim that ended, another process's work).
const IDLE_LOOK: Duration = Duration::from_secs(30);
/// New events start workers at most this often (each look reads every
/// webhook's state; a busy board publishes thousands of events a
/// second, and running workers pick them up by themselves).
const LOOK_EVERY: Duration = Duration::from_millis(20);
/// A worker whose batch was not full waits this long before the next, so
/// a webhook that keeps up records its progress about 50 times a second
/// at most, not once per event.
const LINGER: Duration = Duration::from_millis(20);

struct Sender {
    board: Board,
    client: reqwest::Client,
    rule: AddressRule,
    permits: Semaphore,
    /// This process's claims on webhooks are held under this id.
    holder: Uuid,
    timeout: Duration,
    batch: usize,
}

/// Starts the sender; it stops when `shutdown` is cancelled, once every
/// worker has recorded what it did and the claims are handed back.
pub(crate) fn spawn(
    board: Board,
    shutdown: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, reqwest::Error> {
    let options = board.options().webhooks.clone();
    let rule = AddressRule { allow_private: options.allow_private };
    taskboard_core::tls::install_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(options.policy.timeout)
        .connect_timeout(options.policy.timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .dns_resolver(Arc::new(PublicResolver { rule }))
        .user_agent(concat!("Taskboard-Webhooks/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let sender = Arc::new(Sender {
        board,
        client,
        rule,
        permits: Semaphore::new(CONCURRENT_ATTEMPTS),
        holder: Uuid::new_v4(),
        timeout: options.policy.timeout,
        batch: options.policy.batch,
    });
    Ok(tokio::spawn(follow(sender, shutdown)))
}

async fn follow(sender: Arc<Sender>, shutdown: CancellationToken) {
    let board = sender.board.clone();
    let mut seq = board.watch_seq();
    let workers = TaskTracker::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Uuid>();
    let mut running = HashSet::new();
    let mut paced = false;
    loop {
        if paced {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(LOOK_EVERY) => {}
            }
        }
        seq.borrow_and_update();
        let mut wake = IDLE_LOOK;
        match board.webhook_schedule(sender.holder).await {
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
            Err(e) => tracing::warn!(%e, "reading the webhook schedule failed"),
        }
        paced = false;
        tokio::select! {
            _ = shutdown.cancelled() => break,
            changed = seq.changed() => {
                if changed.is_err() {
                    break;
                }
                paced = true;
            }
            _ = board.webhooks_woken() => {}
            Some(id) = done_rx.recv() => {
                running.remove(&id);
                // Its work may look due and yet be unreadable for a moment
                // (events another process committed, still above the
                // mark): the next look is paced, not at once.
                paced = true;
            }
            _ = tokio::time::sleep(wake) => {}
        }
    }
    workers.close();
    workers.wait().await;
    if let Err(e) = board.release_webhook_claims(sender.holder).await {
        tracing::warn!(%e, "handing back the webhook claims failed");
    }
}

/// Sends the due work of one webhook, a batch at a time, until none is
/// due. On shutdown the batch under way ends after its current attempt.
async fn work(sender: &Sender, webhook: Uuid, shutdown: &CancellationToken) {
    let board = &sender.board;
    while !shutdown.is_cancelled() {
        let batch = match board.claim_deliveries(webhook, sender.holder).await {
            Ok(Some(batch)) => batch,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(%e, %webhook, "claiming webhook deliveries failed");
                return;
            }
        };
        let mut outcomes = Vec::with_capacity(batch.items.len());
        for item in &batch.items {
            // An attempt that could outlast the claim waits for the next
            // batch, which renews it.
            let latest_end = Timestamp::now().checked_add(sender.timeout).unwrap_or(batch.until);
            if shutdown.is_cancelled() || latest_end > batch.until {
                break;
            }
            outcomes.push(sender.attempt(&batch, item).await);
        }
        let full = batch.items.len() >= sender.batch;
        if let Err(e) = board.finish_deliveries(batch, outcomes).await {
            tracing::warn!(%e, %webhook, "recording webhook deliveries failed");
            return;
        }
        if !full {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(LINGER) => {}
            }
        }
    }
}

impl Sender {
    async fn attempt(&self, batch: &DeliveryBatch, item: &DeliveryItem) -> Outcome {
        let _permit = self.permits.acquire().await;
        let url = match reqwest::Url::parse(&batch.url) {
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
        let id = item.id.to_string();
        let timestamp = Timestamp::now().as_second();
        let signature = match signatures(&batch.secrets, &id, timestamp, item.body.as_bytes()) {
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
            .body(item.body.clone())
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
