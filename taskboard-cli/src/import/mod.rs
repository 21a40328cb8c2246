//! Readers of the files other trackers write, into the board's import
//! records (docs/import.md has the mapping of each). They live in the
//! command line, not the core: the core takes records already read
//! (`POST /projects/{id}/import`), so a program embedding the board maps
//! its own sources, and the core carries no CSV or YAML reader.
//!
//! A reader streams: it hands over one record at a time, so a large file
//! is never held whole (Task Master's `tasks.json`, one JSON document of
//! a few hundred tasks, is the exception). A malformed record stops the
//! reading with its file and line or row and the reason.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use taskboard_core::api::ImportRecord;
use taskboard_core::model::{Priority, TaskStatus, TaskType};
use taskboard_core::validate::{LabelName, LongText, Title};

mod backlog;
mod beads;
mod csv_exports;
mod github;
mod taskmaster;

/// The trackers `taskboard import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// beads: `.beads/issues.jsonl`, one issue per line.
    Beads,
    /// Backlog.md: the `backlog/` folder of Markdown files.
    Backlog,
    /// Task Master: `.taskmaster/tasks/tasks.json`.
    Taskmaster,
    /// GitHub Issues: the JSON of `gh issue list --json …`.
    Github,
    /// A Jira CSV export.
    Jira,
    /// A Linear CSV export.
    Linear,
}

impl Format {
    /// The `source` of the records: the first half of their `external_ref`.
    pub fn source(self) -> &'static str {
        match self {
            Format::Beads => "beads",
            Format::Backlog => "backlog",
            Format::Taskmaster => "taskmaster",
            Format::Github => "github",
            Format::Jira => "jira",
            Format::Linear => "linear",
        }
    }
}

/// What a reader hands over.
#[derive(Debug)]
pub enum Item {
    /// A record, with where it was read (`issues.jsonl:12`).
    Record(ImportRecord, String),
    /// An entry of the source not imported, with the reason.
    Skip { id: String, place: String, reason: String },
}

/// A malformed record: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub place: String,
    pub reason: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.place, self.reason)
    }
}

impl std::error::Error for Malformed {}

pub type Read<T> = std::result::Result<T, Malformed>;

pub(crate) fn malformed(place: impl Into<String>, reason: impl std::fmt::Display) -> Malformed {
    Malformed { place: place.into(), reason: reason.to_string() }
}

/// Reads `path` as `format`, handing each item to `each` in file order.
/// An error of `each` stops the reading and is returned as it is.
pub fn read(format: Format, path: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    match format {
        Format::Beads => beads::read(&locate(path, &[".beads/issues.jsonl", "issues.jsonl"]), each),
        Format::Backlog => backlog::read(&locate(path, &["backlog"]), each),
        Format::Taskmaster => {
            taskmaster::read(&locate(path, &[".taskmaster/tasks/tasks.json", "tasks/tasks.json"]), each)
        }
        Format::Github => github::read(path, each),
        Format::Jira => csv_exports::read_jira(path, each),
        Format::Linear => csv_exports::read_linear(path, each),
    }
}

/// A file or folder given directly, or the usual place of it inside a
/// project folder given instead.
fn locate(path: &Path, usual: &[&str]) -> PathBuf {
    if path.is_dir() {
        for u in usual {
            let inside = path.join(u);
            if inside.exists() {
                return inside;
            }
        }
    }
    path.to_path_buf()
}

pub(crate) fn display(path: &Path) -> String {
    path.display().to_string()
}

// ---- mapping shared by the readers ---------------------------------------------

/// A title, cut to the board's 500 characters; an empty one is malformed.
pub(crate) fn title(place: &str, text: &str) -> Read<Title> {
    let cut: String = text.trim().chars().take(500).collect();
    Title::new(cut).map_err(|e| malformed(place, format!("title: {}", e.0)))
}

/// A description, cut to the board's 100,000 characters; none when empty.
pub(crate) fn description(text: &str) -> Option<LongText> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let cut: String = text.chars().take(100_000).collect();
    LongText::new(cut).ok()
}

/// Labels, cut to 64 characters, empty ones and repeats left out.
pub(crate) fn labels<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<LabelName> {
    let mut out: Vec<LabelName> = Vec::new();
    for n in names {
        let cut: String = n.trim().chars().take(64).collect();
        if let Ok(l) = LabelName::new(cut)
            && !out.iter().any(|o| o.eq_ignore_ascii_case(&l))
        {
            out.push(l);
        }
    }
    out
}

/// A type: bug and epic are the board's own; any other type of the source
/// (feature, chore, story …) is a task with a label of that name.
pub(crate) fn kind_and_label(kind: &str) -> (TaskType, Option<String>) {
    let k = kind.trim().to_lowercase();
    match k.as_str() {
        "" | "task" | "sub-task" | "subtask" => (TaskType::Task, None),
        "bug" | "defect" => (TaskType::Bug, None),
        "epic" => (TaskType::Epic, None),
        _ => (TaskType::Task, Some(k)),
    }
}

/// A status named in words, as the CSV exports and Backlog.md have them
/// (teams name their own): by the words it holds.
pub(crate) fn status_from_words(status: &str) -> TaskStatus {
    let s = status.trim().to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| s.contains(w));
    if s.starts_with("selected") {
        TaskStatus::Todo
    } else if has(&["progress", "doing", "started", "active", "develop"]) {
        TaskStatus::InProgress
    } else if has(&["review", "qa", "test", "verif"]) {
        TaskStatus::Review
    } else if has(&[
        "done",
        "closed",
        "resolved",
        "complete",
        "fixed",
        "released",
        "cancel",
        "duplicate",
        "won",
    ]) {
        TaskStatus::Done
    } else if has(&["to do", "todo", "open", "selected", "ready", "new", "pending", "reopened"]) {
        TaskStatus::Todo
    } else {
        TaskStatus::Backlog
    }
}

/// Whether a status in words means the work was dropped, not done.
pub(crate) fn is_canceled(status: &str) -> bool {
    let s = status.to_lowercase();
    s.contains("cancel") || s.contains("duplicate") || s.contains("won't") || s.contains("wont")
}

/// A priority named in words (`Highest`, `P1`, `critical`).
pub(crate) fn priority_from_words(p: &str) -> Option<Priority> {
    let s = p.trim().to_lowercase();
    let s = s.trim_start_matches("priority").trim_start_matches([':', ' ', '-', '/']);
    Some(match s {
        "urgent" | "critical" | "highest" | "blocker" | "p0" => Priority::Urgent,
        "high" | "major" | "p1" => Priority::High,
        "medium" | "normal" | "p2" => Priority::Medium,
        "low" | "lowest" | "minor" | "trivial" | "p3" | "p4" => Priority::Low,
        _ => return None,
    })
}

/// A time as the trackers write it: RFC 3339; `2024-05-01 13:45[:10]`,
/// `2024-05-01` (UTC); Jira's `12/Mar/24 9:41 AM` (UTC); or a JavaScript
/// date (`Thu Mar 14 2024 10:00:00 GMT+0000 (…)`).
pub(crate) fn time(text: &str) -> Option<Timestamp> {
    let t = text.trim().trim_matches('\'');
    if t.is_empty() {
        return None;
    }
    if let Ok(ts) = t.parse::<Timestamp>() {
        return Some(ts);
    }
    let civil = |fmt: &str, s: &str| jiff::civil::DateTime::strptime(fmt, s).ok();
    for fmt in
        ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%d/%b/%y %I:%M %p", "%d/%b/%Y %I:%M %p"]
    {
        if let Some(dt) = civil(fmt, t) {
            return dt.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp());
        }
    }
    if let Ok(d) = jiff::civil::Date::strptime("%Y-%m-%d", t) {
        return d.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp());
    }
    let js = t.split(" (").next().unwrap_or(t);
    jiff::Zoned::strptime("%a %b %d %Y %H:%M:%S GMT%z", js).ok().map(|z| z.timestamp())
}

/// [`time`] of a field that may be empty; a value that is no time is
/// malformed.
pub(crate) fn time_field(place: &str, field: &str, text: &str) -> Read<Option<Timestamp>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    time(text).map(Some).ok_or_else(|| malformed(place, format!("{field}: {text:?} is not a date and time")))
}

/// A record with the fields every reader fills.
pub(crate) fn record(id: impl Into<String>, title: Title) -> ImportRecord {
    ImportRecord::new(id, title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_the_forms_trackers_write() {
        let at = |s: &str| time(s).map(|t| t.to_string());
        assert_eq!(at("2024-03-12T09:41:00Z").as_deref(), Some("2024-03-12T09:41:00Z"));
        assert_eq!(at("2024-03-12 09:41").as_deref(), Some("2024-03-12T09:41:00Z"));
        assert_eq!(at("'2024-03-12'").as_deref(), Some("2024-03-12T00:00:00Z"));
        assert_eq!(at("12/Mar/24 9:41 AM").as_deref(), Some("2024-03-12T09:41:00Z"));
        assert_eq!(
            at("Thu Mar 14 2024 10:00:00 GMT+0100 (Central European Standard Time)").as_deref(),
            Some("2024-03-14T09:00:00Z")
        );
        assert_eq!(at("soon"), None);
    }

    #[test]
    fn statuses_and_priorities_in_words() {
        assert_eq!(status_from_words("In Progress"), TaskStatus::InProgress);
        assert_eq!(status_from_words("Selected for Development"), TaskStatus::Todo);
        assert_eq!(status_from_words("To Do"), TaskStatus::Todo);
        assert_eq!(status_from_words("In Review"), TaskStatus::Review);
        assert_eq!(status_from_words("Canceled"), TaskStatus::Done);
        assert_eq!(status_from_words("Icebox"), TaskStatus::Backlog);
        assert_eq!(priority_from_words("Highest"), Some(Priority::Urgent));
        assert_eq!(priority_from_words("priority: low"), Some(Priority::Low));
        assert_eq!(priority_from_words("No priority"), None);
    }
}
