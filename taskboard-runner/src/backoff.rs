//! The wait between attempts to reach the board again: 100 ms, doubling
//! up to 5 s. (The command line's client waits the same way for its
//! event stream; the runner reaches the board through any `Perform`, so
//! it keeps its own.)

use std::time::Duration;

use taskboard_core::{Error, ErrorKind, Result};

pub(crate) struct Backoff {
    delay: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { delay: Duration::from_millis(100) }
    }
}

impl Backoff {
    /// After a failed attempt: the error back when trying again cannot
    /// fix it (credentials refused, an unknown address), else a wait.
    pub async fn wait(&mut self, e: Error) -> Result<()> {
        if matches!(e.kind(), ErrorKind::Unauthorized | ErrorKind::Forbidden | ErrorKind::NotFound) {
            return Err(e);
        }
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(5));
        Ok(())
    }
}
