//! The wake-up of a board shared by several processes: each store keeps
//! one connection that `LISTEN`s on the board's channel, where every
//! writing transaction that stored events ends with a `NOTIFY` carrying
//! its newest seq (`write`). The notification is only a wake-up: the
//! board reads what it missed from the events table, which is the truth,
//! and also looks at least every second, since a notification sent while
//! the listener was reconnecting is lost.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_postgres::tls::TlsStream;
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};

use super::conn::Target;
use super::schema::ident;

/// Wait before connecting again after the listening connection was lost.
const RECONNECT: Duration = Duration::from_secs(1);

/// The channel of the board in `schema`: `taskboard_<schema>`, cut to the
/// 63 bytes of an identifier (the schema name is ASCII).
pub fn channel(schema: &str) -> String {
    let mut name = format!("taskboard_{schema}");
    name.truncate(63);
    name
}

/// Starts the listener on `rt`. The value of the returned channel is the
/// newest seq notified so far; it also changes, with no new seq, each time
/// the listener (re)connects, since notifications may have been missed
/// meanwhile. The listener stops once every receiver is gone (or with
/// the runtime).
pub(super) fn spawn(rt: &tokio::runtime::Handle, target: Target, schema: &str) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    let listen = format!("LISTEN {}", ident(&channel(schema)));
    rt.spawn(async move {
        loop {
            match listen_once(&target, &listen, &tx).await {
                Ok(()) => tracing::warn!("the PostgreSQL listening connection ended; connecting again"),
                Err(e) => tracing::warn!(%e, "the PostgreSQL listening connection failed; connecting again"),
            }
            tokio::select! {
                _ = tx.closed() => return,
                _ = tokio::time::sleep(RECONNECT) => {}
            }
        }
    });
    rx
}

/// Listens on one connection until it ends (or no one listens anymore).
async fn listen_once(
    target: &Target,
    listen: &str,
    tx: &watch::Sender<u64>,
) -> Result<(), tokio_postgres::Error> {
    match &target.tls {
        None => {
            let (client, connection) = target.config.connect(NoTls).await?;
            listen_on(client, connection, listen, tx).await
        }
        Some(tls) => {
            let (client, connection) = target.config.connect(tls.clone()).await?;
            listen_on(client, connection, listen, tx).await
        }
    }
}

/// Sends `LISTEN` on `client` and passes on the notifications its
/// connection receives.
async fn listen_on<S, T>(
    client: Client,
    mut connection: Connection<S, T>,
    listen: &str,
    tx: &watch::Sender<u64>,
) -> Result<(), tokio_postgres::Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: TlsStream + Unpin,
{
    // The connection's messages must be polled for the LISTEN to be sent
    // and answered, so both run in one loop.
    let listening = client.batch_execute(listen);
    tokio::pin!(listening);
    let mut listened = false;
    loop {
        tokio::select! {
            done = &mut listening, if !listened => {
                done?;
                listened = true;
                // What was committed while no one listened is read now.
                tx.send_modify(|_| {});
            }
            message = std::future::poll_fn(|cx| connection.poll_message(cx)) => match message {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if let Ok(seq) = n.payload().parse::<u64>() {
                        tx.send_modify(|newest| *newest = (*newest).max(seq));
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            _ = tx.closed() => return Ok(()),
        }
    }
}
