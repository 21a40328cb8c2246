//! Counters and histograms that a server exposes for monitoring, and the
//! Prometheus text exposition format they are written in.
//!
//! The values are atomics, updated where things happen (the storage
//! writer, the event hub, the server's request cycle) without a lock;
//! [`Text`] writes them in the format a Prometheus scraper reads
//! (`# HELP`, `# TYPE`, then one `name{labels} value` line per sample).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of latency buckets, in seconds.
pub const SECONDS_BUCKETS: &[f64] =
    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Upper bounds of batch size buckets, in operations.
pub const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];

/// A histogram of observations with fixed bucket bounds. Observations are
/// counted in the first bucket they fit; [`Text::histogram`] writes the
/// cumulative counts Prometheus expects.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, and the last for values above every bound.
    counts: Box<[AtomicU64]>,
    /// The sum, in millionths of the unit (microseconds for seconds).
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: f64) {
        let i = self.bounds.iter().position(|b| value <= *b).unwrap_or(self.bounds.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add((value * 1e6) as u64, Ordering::Relaxed);
    }

    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Sum of the observations so far.
    pub fn sum(&self) -> f64 {
        self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
    }
}

/// What a storage writer records of its batches.
#[derive(Debug)]
pub struct WriterMetrics {
    /// Operations per batch (one transaction, one commit).
    pub batch_operations: Histogram,
    /// From the start of a batch's transaction until it is durable.
    pub batch_seconds: Histogram,
    /// The commit alone (with its sync to disk).
    pub commit_seconds: Histogram,
    /// Batches that failed as a whole (nothing of them committed).
    pub failed_batches: AtomicU64,
    /// Waiting for the board's write lock, with the `BEGIN` (a store
    /// shared by several processes; none for the others).
    pub lock_seconds: Histogram,
    /// Reads of the database by the writer, each a round trip (a store
    /// whose writer reads over the network; 0 for the others).
    pub read_round_trips: AtomicU64,
    /// Per batch, the time its operations spent reading the database.
    pub read_seconds: Histogram,
    /// The batch's writes, sent at once, until the database answered.
    pub write_seconds: Histogram,
}

impl Default for WriterMetrics {
    fn default() -> WriterMetrics {
        WriterMetrics {
            batch_operations: Histogram::new(BATCH_BUCKETS),
            batch_seconds: Histogram::new(SECONDS_BUCKETS),
            commit_seconds: Histogram::new(SECONDS_BUCKETS),
            failed_batches: AtomicU64::new(0),
            lock_seconds: Histogram::new(SECONDS_BUCKETS),
            read_round_trips: AtomicU64::new(0),
            read_seconds: Histogram::new(SECONDS_BUCKETS),
            write_seconds: Histogram::new(SECONDS_BUCKETS),
        }
    }
}

/// A document in the Prometheus text exposition format (version 0.0.4),
/// written family by family: [`Text::family`] names one and gives its
/// type, then its samples follow.
#[derive(Debug, Default)]
pub struct Text {
    out: String,
}

/// The media type of [`Text`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Text {
    pub fn new() -> Text {
        Text::default()
    }

    /// Starts a family: its help line and type (`counter`, `gauge`,
    /// `histogram`).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) -> &mut Text {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        self
    }

    /// One sample of a counter or gauge.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> &mut Text {
        self.out.push_str(name);
        self.labels(labels, None);
        let _ = writeln!(self.out, " {}", number(value));
        self
    }

    /// The samples of one histogram: cumulative `_bucket`s ending with
    /// `le="+Inf"`, `_sum` and `_count`.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) -> &mut Text {
        let mut cumulative = 0;
        for (i, count) in h.counts.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = h.bounds.get(i).map_or_else(|| "+Inf".to_string(), |b| number(*b));
            let _ = write!(self.out, "{name}_bucket");
            self.labels(labels, Some(&le));
            let _ = writeln!(self.out, " {cumulative}");
        }
        let _ = write!(self.out, "{name}_sum");
        self.labels(labels, None);
        let _ = writeln!(self.out, " {}", number(h.sum()));
        let _ = write!(self.out, "{name}_count");
        self.labels(labels, None);
        let _ = writeln!(self.out, " {cumulative}");
        self
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<&str>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.out.push('{');
        let mut first = true;
        for (name, value) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
            if !first {
                self.out.push(',');
            }
            first = false;
            let _ = write!(self.out, "{name}=\"");
            for c in value.chars() {
                match c {
                    '\\' => self.out.push_str("\\\\"),
                    '"' => self.out.push_str("\\\""),
                    '\n' => self.out.push_str("\\n"),
                    c => self.out.push(c),
                }
            }
            self.out.push('"');
        }
        self.out.push('}');
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// A number as the format writes it: integers without a fraction.
fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_is_written_cumulatively_with_escaped_labels() {
        let h = Histogram::new(&[1.0, 2.0]);
        h.observe(0.5);
        h.observe(1.5);
        h.observe(7.0);
        let mut t = Text::new();
        t.family("x", "histogram", "An x.").histogram("x", &[("who", "a\"b\\c")], &h);
        let text = t.finish();
        assert_eq!(
            text,
            "# HELP x An x.\n# TYPE x histogram\n\
             x_bucket{who=\"a\\\"b\\\\c\",le=\"1\"} 1\n\
             x_bucket{who=\"a\\\"b\\\\c\",le=\"2\"} 2\n\
             x_bucket{who=\"a\\\"b\\\\c\",le=\"+Inf\"} 3\n\
             x_sum{who=\"a\\\"b\\\\c\"} 9\n\
             x_count{who=\"a\\\"b\\\\c\"} 3\n"
        );
    }
}
