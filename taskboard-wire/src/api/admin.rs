//! Administration and the event stream.

use crate::StreamQuery;
use crate::Upgrade;
use crate::endpoint::{Endpoint, Info, Method};
use crate::{ArchiveSummary, BackupRequest};

/// `POST /admin/backup`.
#[derive(Debug)]
pub struct Backup;

impl Endpoint for Backup {
    const INFO: Info = Info {
        name: "backup",
        method: Method::Post,
        path: "/api/v1/admin/backup",
        auth: true,
        status: 200,
        summary: "Consistent backup of the board as an archive (owners only)",
        description: "Writes an archive of the whole board, files included, into `path`: an absolute \
            directory on the server's machine that does not exist yet or is empty. The board keeps \
            serving while it is written. A path that cannot hold the archive is 422 or 409 with the \
            reason.",
        errors: &[403, 409],
    };
    type Path = ();
    type Query = ();
    type Body = BackupRequest;
    type Response = ArchiveSummary;
}

/// `GET /ws`: the event stream over a WebSocket.
#[derive(Debug)]
pub struct EventStream;

impl Endpoint for EventStream {
    const INFO: Info = Info {
        name: "websocket",
        method: Method::Get,
        path: "/api/v1/ws",
        auth: true,
        status: 101,
        summary: "Event stream (WebSocket)",
        description: "Upgrades to a WebSocket carrying one JSON frame per event (`type`, `seq`, `ts`, \
            `data`), first a `hello` with the newest seq. `since` replays the retained events after that \
            seq first, with no gap or duplicate; when they are no longer retained a `resync_required` \
            frame comes first. A request without the upgrade headers is 400.",
        errors: &[400],
    };
    type Path = ();
    type Query = StreamQuery;
    type Body = ();
    type Response = Upgrade;
}
