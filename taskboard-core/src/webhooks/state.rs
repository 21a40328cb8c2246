//! What the board stores about deliveries, and what a sender works with.
//!
//! A webhook's progress is its cursor (the seq of the last event whose
//! first attempt is done, or that it does not take) and a
//! [`WebhookState`]: the deliveries waiting for another attempt, and the
//! claim of the sender working on it. Frames of first attempts are read
//! from the event log when they are sent; a delivery that is retried or
//! redelivered keeps a copy ([`DeliveryRecord`]), and deliveries that got
//! through at their first attempt are logged a batch per record
//! ([`BatchRecord`]).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Delivery, DeliveryState};

/// The delivery state of one webhook, beside its cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct WebhookState {
    /// Deliveries waiting for another attempt: first attempts that did
    /// not get through and redeliveries asked for, each on its own
    /// schedule (their records, with the frames, are in the delivery
    /// log). While there are `DeliveryPolicy::max_pending` of them the
    /// cursor stays where it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<Retry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// Batch records written so far: the number of the next one.
    #[serde(default)]
    pub batches: u64,
}

/// A delivery waiting for its next attempt: its seq and when it is due
/// (kept to the millisecond, `[seq, ms]`, as a webhook may have a
/// thousand of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Retry(
    pub u64,
    #[serde(with = "jiff::fmt::serde::timestamp::millisecond::required")] pub Timestamp,
);

impl Retry {
    pub fn seq(&self) -> u64 {
        self.0
    }

    pub fn due(&self) -> Timestamp {
        self.1
    }
}

/// A sender working on a webhook until `until`; no other sender takes
/// the webhook before then.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Claim {
    pub holder: Uuid,
    pub until: Timestamp,
}

/// A delivery the log keeps one by one: one whose first attempt did not
/// get through (pending, failed, or delivered after retries), or one
/// redelivered. It holds a copy of its frame, so it can be sent again
/// after the event left the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DeliveryRecord {
    pub seq: u64,
    pub kind: String,
    pub frame: String,
    pub state: DeliveryState,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// When a pending delivery is next attempted.
    pub due: Option<Timestamp>,
    pub retry_from: Timestamp,
    pub created_at: Timestamp,
}

impl DeliveryRecord {
    pub fn to_wire(&self, webhook: Uuid) -> Delivery {
        Delivery {
            id: delivery_id(webhook, self.seq),
            seq: self.seq,
            kind: self.kind.clone(),
            state: self.state,
            attempts: self.attempts,
            last_status: self.last_status,
            last_error: self.last_error.clone(),
            next_attempt_at: if self.state == DeliveryState::Pending { self.due } else { None },
            created_at: self.created_at,
        }
    }
}

/// The deliveries of one batch that got through at their first attempt,
/// written compactly (one is about 6 bytes): each entry is the seq's
/// distance from the previous one (the first from `start`) and the index
/// of its event type in `kinds`; `status` is every entry's status but
/// those listed in `other`, by position.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct BatchRecord {
    pub at: Timestamp,
    pub start: u64,
    pub kinds: Vec<String>,
    pub entries: Vec<(u64, u32)>,
    pub status: u16,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<(u32, u16)>,
}

impl BatchRecord {
    /// A record of `delivered` (seq, type, status), in seq order.
    pub fn new(at: Timestamp, delivered: &[(u64, String, u16)]) -> BatchRecord {
        let mut r = BatchRecord { at, status: delivered.first().map_or(200, |d| d.2), ..Default::default() };
        r.start = delivered.first().map_or(0, |d| d.0);
        let mut previous = r.start;
        for (i, (seq, kind, status)) in delivered.iter().enumerate() {
            let k = match r.kinds.iter().position(|x| x == kind) {
                Some(k) => k,
                None => {
                    r.kinds.push(kind.clone());
                    r.kinds.len() - 1
                }
            };
            r.entries.push((seq - previous, k as u32));
            previous = *seq;
            if *status != r.status {
                r.other.push((i as u32, *status));
            }
        }
        r
    }

    pub fn to_wire(&self, webhook: Uuid) -> Vec<Delivery> {
        let mut seq = self.start;
        let mut out = Vec::with_capacity(self.entries.len());
        for (i, (delta, kind)) in self.entries.iter().enumerate() {
            seq += delta;
            let status = self.other.iter().find(|(at, _)| *at as usize == i).map_or(self.status, |o| o.1);
            out.push(Delivery {
                id: delivery_id(webhook, seq),
                seq,
                kind: self.kinds.get(*kind as usize).cloned().unwrap_or_default(),
                state: DeliveryState::Delivered,
                attempts: 1,
                last_status: Some(status),
                last_error: None,
                next_attempt_at: None,
                created_at: self.at,
            });
        }
        out
    }
}

/// The id of the delivery of event `seq` to `webhook`, which is also the
/// `webhook-id` header of its attempts: the same for every attempt, from
/// any process, without being stored. Eight bytes of the webhook's id,
/// then the seq (a UUID of version 8).
pub fn delivery_id(webhook: Uuid, seq: u64) -> Uuid {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&webhook.as_bytes()[8..]);
    b[8..].copy_from_slice(&seq.to_be_bytes());
    uuid::Builder::from_custom_bytes(b).into_uuid()
}

/// The seq a delivery id of `webhook` names, if it is one.
pub(crate) fn delivery_seq(webhook: Uuid, id: Uuid) -> Option<u64> {
    let seq = u64::from_be_bytes(id.as_bytes()[8..].try_into().ok()?) & (u64::MAX >> 2);
    (delivery_id(webhook, seq) == id).then_some(seq)
}

/// Work a sender claimed: the retries due, then the events after the
/// webhook's cursor that it takes, in seq order (their first attempts).
#[derive(Debug, Clone)]
pub struct DeliveryBatch {
    pub webhook_id: Uuid,
    pub url: String,
    /// The secrets signing each attempt (two during a rotation's grace).
    pub secrets: Vec<String>,
    /// The claim ends then: start no attempt that could outlast it.
    pub until: Timestamp,
    pub items: Vec<DeliveryItem>,
    pub(crate) holder: Uuid,
    /// The cursor when the batch was read.
    pub(crate) from: u64,
    /// The last event the batch considered.
    pub(crate) to: u64,
}

/// One event to POST.
#[derive(Debug, Clone)]
pub struct DeliveryItem {
    /// The `webhook-id`.
    pub id: Uuid,
    pub seq: u64,
    pub body: String,
    /// A retry or a redelivery (sent from its logged copy), not a first
    /// attempt.
    pub retry: bool,
    pub(crate) kind: String,
    pub(crate) retry_from: Timestamp,
    pub(crate) created_at: Timestamp,
}

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer.
    Delivered { status: u16 },
    /// Any other answer, a redirect included.
    Refused { status: u16 },
    /// No answer: refused address, connection error, timeout.
    Unreachable { error: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_record_reads_back_its_deliveries() {
        let hook = Uuid::now_v7();
        let delivered = vec![
            (7, "task.created".to_string(), 200),
            (9, "message.new".to_string(), 204),
            (30, "task.created".to_string(), 200),
        ];
        let r = BatchRecord::new(Timestamp::now(), &delivered);
        assert_eq!(r.kinds.len(), 2);
        let back: Vec<(u64, String, u16)> =
            r.to_wire(hook).into_iter().map(|d| (d.seq, d.kind, d.last_status.unwrap())).collect();
        assert_eq!(back, delivered);
    }

    #[test]
    fn a_delivery_id_names_its_webhook_and_seq() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let id = delivery_id(a, 123_456);
        assert_eq!(id, delivery_id(a, 123_456));
        assert_ne!(id, delivery_id(b, 123_456));
        assert_eq!(delivery_seq(a, id), Some(123_456));
        assert_eq!(delivery_seq(b, id), None);
        assert_eq!(delivery_seq(a, Uuid::now_v7()), None);
    }
}
