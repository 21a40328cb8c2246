//! The log: human-readable lines, or one JSON object per line
//! (`--log-format json`) for a collector. Either goes to stderr.

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
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
        LogFormat::Json => {
            builder.json().flatten_event(true).with_current_span(false).with_span_list(true).init()
        }
    }
    Ok(())
}
