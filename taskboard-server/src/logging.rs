//! The log: human-readable lines, or one JSON object per line
//! (`--log-format json`) for a collector. Either goes to stderr, each
//! line through `taskboard_core::redact` first, so no credential reaches
//! the log whatever field or message carries it (docs/decisions.md 20.t).

use std::io::Write;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event, coloured on a terminal.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, the
    /// event's fields (`message` among them) at the top level, and
    /// `spans`, the fields of each enclosing span (an HTTP request's
    /// `request_id`).
    Json,
}

/// Installs the global subscriber; `filter` is an `EnvFilter` directive
/// (`info`, `taskboard_server=debug` …).
pub fn init(format: LogFormat, filter: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("bad log level {filter:?}: {e}"))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(Redacting);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
        LogFormat::Json => {
            builder.json().flatten_event(true).with_current_span(false).with_span_list(true).init()
        }
    }
    Ok(())
}

/// Makes a [`Line`] per event.
struct Redacting;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Redacting {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line(Vec::with_capacity(256))
    }
}

/// One event's text, kept whole until the event is written, then
/// redacted and written to stderr at once: a credential split across two
/// writes would escape a writer that redacted each write.
struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.0);
        let _ = std::io::stderr().lock().write_all(redacted(&text).as_bytes());
    }
}

fn redacted(text: &str) -> std::borrow::Cow<'_, str> {
    taskboard_core::redact::redact(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_line_loses_its_credentials_whatever_carries_them() {
        let line = r#"{"message":"request","query":"access_token=tba-AbC123_-x&q=tbk-Zz9","error":"bad eyJh.eyJz.sig"}"#;
        assert_eq!(
            redacted(line),
            r#"{"message":"request","query":"access_token=tba-REDACTED&q=tbk-REDACTED","error":"bad REDACTED"}"#
        );
    }
}
