//! The words of the events endpoints (see `taskboard_core::api`).

use crate::error::{Error, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The query of `GET /events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EventsQuery {
    /// Events after this seq; without it, from now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// 1–1000, default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000), extend("default" = 100))]
    pub limit: Option<u32>,
    /// Seconds (0–60) to hold the request until an event arrives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<u32>,
    /// The runner polling, by its name: the board lists it among the
    /// runners serving the caller (`GET /runners`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// A page of events.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EventPage {
    /// Event frames (`type`, `seq`, `ts`, `data`), in seq order.
    pub events: Vec<serde_json::Value>,
    /// The `since` of the next request.
    pub next: u64,
    /// `since` was outside the retained window: reload, then follow from
    /// `next`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resync_required: bool,
    /// The credentials of the request ended with these events (revoked,
    /// expired, the member deleted or deactivated): the next request
    /// answers 401.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
}

impl EventsQuery {
    pub fn checked(&self) -> Result<(usize, Duration)> {
        let limit = self.limit.unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            return Err(Error::invalid("limit", format!("must be 1-1000, got {limit}")));
        }
        let wait = self.wait.unwrap_or(0);
        if wait > 60 {
            return Err(Error::invalid("wait", format!("must be 0-60 seconds, got {wait}")));
        }
        Ok((limit as usize, Duration::from_secs(wait.into())))
    }
}
