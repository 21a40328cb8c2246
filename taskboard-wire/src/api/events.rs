//! The event stream over plain HTTP: long-poll JSON, or Server-Sent
//! Events, for agents that cannot hold a WebSocket.

use crate::endpoint::{Endpoint, Info, Method};
use crate::{EventPage, EventsQuery};

/// `GET /events`.
#[derive(Debug)]
pub struct PollEvents;

impl Endpoint for PollEvents {
    const INFO: Info = Info {
        name: "poll_events",
        method: Method::Get,
        path: "/api/v1/events",
        auth: true,
        status: 200,
        summary: "Events over plain HTTP (long-poll or Server-Sent Events)",
        description: "The events after `since` that the caller may see, in order, as the WebSocket sends \
            them, and `next`, the `since` of the following request. With `wait` the request is held until \
            at least one event arrives or the wait ends (then `events` is empty). A `since` outside the \
            retained window answers no events, the newest seq as `next` and `resync_required: true`. With \
            `Accept: text/event-stream` the same endpoint is a Server-Sent Events stream: `id:` the seq, \
            `event:` the type, `data:` the frame; `Last-Event-ID` resumes like `since`; a comment line \
            every 15 s keeps proxies from closing it.",
        errors: &[],
    };
    type Path = ();
    type Query = EventsQuery;
    type Body = ();
    type Response = EventPage;
}
