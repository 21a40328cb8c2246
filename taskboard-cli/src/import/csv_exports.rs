//! The CSV exports of Jira and Linear, read row by row. Columns are found
//! by their header; Jira repeats a header for each value of a many-valued
//! field (`Labels`, `Comment`, issue links), so every column of that name
//! is read. Unknown columns are ignored.

use std::collections::HashMap;
use std::path::Path;

use taskboard_core::api::{ImportComment, ImportLink, ImportRecord};
use taskboard_core::model::{LinkType, TaskStatus, TaskType};

use super::{
    Item, Read, description, display, is_canceled, kind_and_label, labels, malformed, priority_from_words,
    record, status_from_words, time, time_field, title,
};

/// A CSV file with its header.
struct Table {
    name: String,
    reader: csv::Reader<std::fs::File>,
    headers: Vec<String>,
}

impl Table {
    fn open(path: &Path) -> Read<Table> {
        let name = display(path);
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_path(path)
            .map_err(|e| malformed(&name, format!("cannot open: {e}")))?;
        let headers = reader
            .headers()
            .map_err(|e| malformed(format!("{name}: header"), e))?
            .iter()
            .map(|h| h.trim().trim_start_matches('\u{feff}').to_string())
            .collect();
        Ok(Table { name, reader, headers })
    }

    fn require(&self, columns: &[&str]) -> Read<()> {
        for c in columns {
            if !self.headers.iter().any(|h| h.eq_ignore_ascii_case(c)) {
                return Err(malformed(format!("{}: header", self.name), format!("no column {c:?}")));
            }
        }
        Ok(())
    }

    /// Calls `each` with every row, its place and a way to read columns.
    fn rows(&mut self, each: &mut dyn FnMut(&Row, String) -> Read<()>) -> Read<()> {
        let mut record = csv::StringRecord::new();
        let mut n = 0;
        loop {
            let place_of = |n: usize, line: u64| format!("{}: row {n} (line {line})", self.name);
            let line = self.reader.position().line() + 1;
            match self.reader.read_record(&mut record) {
                Ok(false) => return Ok(()),
                Ok(true) => {
                    n += 1;
                    let line = record.position().map_or(line, |p| p.line());
                    let row = Row { headers: &self.headers, values: &record };
                    each(&row, place_of(n, line))?;
                }
                Err(e) => return Err(malformed(place_of(n + 1, line), e)),
            }
        }
    }
}

struct Row<'a> {
    headers: &'a [String],
    values: &'a csv::StringRecord,
}

impl Row<'_> {
    /// The first non-empty value of the columns of this name.
    fn get(&self, column: &str) -> &str {
        self.all(column).into_iter().next().unwrap_or("")
    }
    /// Every non-empty value of the columns of this name.
    fn all(&self, column: &str) -> Vec<&str> {
        self.headers
            .iter()
            .zip(self.values.iter())
            .filter(|(h, v)| h.eq_ignore_ascii_case(column) && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
            .collect()
    }
}

// ---- Jira ----------------------------------------------------------------

/// A Jira CSV export (Filters → Export → CSV, all fields): `Issue key`,
/// `Issue id`, `Summary`, `Issue Type`, `Status`, `Priority`, `Assignee`,
/// `Created`, `Resolved`, `Labels`, `Description`, `Parent` (the parent's
/// issue id), `Comment` (`time;author;text`) and `Inward/Outward issue
/// link (…)` columns.
pub(super) fn read_jira(path: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    // Parents are named by issue id, records by key: a first reading of
    // those two columns maps one to the other.
    let mut keys: HashMap<String, String> = HashMap::new();
    let mut table = Table::open(path)?;
    table.require(&["Issue key", "Summary"])?;
    table.rows(&mut |row, _| {
        if !row.get("Issue id").is_empty() {
            keys.insert(row.get("Issue id").to_string(), row.get("Issue key").to_string());
        }
        Ok(())
    })?;
    let mut table = Table::open(path)?;
    table.rows(&mut |row, place| each(jira_row(row, place, &keys)?))
}

fn jira_row(row: &Row, place: String, keys: &HashMap<String, String>) -> Read<Item> {
    let key = row.get("Issue key");
    if key.is_empty() {
        return Err(malformed(place, "Issue key: empty"));
    }
    let mut r = record(key, title(&place, row.get("Summary"))?);
    r.description = description(row.get("Description"));
    let status = row.get("Status");
    r.status = status_from_words(status);
    if let Some(p) = priority_from_words(row.get("Priority")) {
        r.priority = p;
    }
    let (kind, type_label) = kind_and_label(row.get("Issue Type"));
    r.kind = kind;
    let mut names: Vec<String> = row.all("Labels").into_iter().map(String::from).collect();
    names.extend(type_label);
    if is_canceled(status) || is_canceled(row.get("Resolution")) {
        names.push("canceled".into());
    }
    r.labels = labels(names.iter().map(String::as_str));
    r.assignee = Some(row.get("Assignee").to_string()).filter(|a| !a.is_empty());
    let parent = row.get("Parent");
    let parent = if parent.is_empty() { row.get("Parent id") } else { parent };
    if !parent.is_empty() {
        r.parent = Some(keys.get(parent).cloned().unwrap_or_else(|| parent.to_string()));
    }
    let epic = row.get("Custom field (Epic Link)");
    if r.parent.is_none() && !epic.is_empty() {
        r.parent = Some(epic.to_string());
    }
    for (h, v) in row.headers.iter().zip(row.values.iter()) {
        let v = v.trim();
        if v.is_empty() {
            continue;
        }
        let h = h.to_lowercase();
        // An export lists a link on both its tasks; each is taken once:
        // a block from the blocked side, as a dependency, other kinds
        // from their outward side.
        let link_type = if h == "inward issue link (blocks)" {
            LinkType::DependsOn
        } else if h.starts_with("outward issue link") && h != "outward issue link (blocks)" {
            LinkType::RelatesTo
        } else {
            continue;
        };
        for target in v.split([',', ';']).map(str::trim).filter(|t| !t.is_empty()) {
            r.links.push(ImportLink { link_type, target: target.to_string() });
        }
    }
    for c in row.all("Comment") {
        r.comments.push(jira_comment(&place, c)?);
    }
    r.created_at = time_field(&place, "Created", row.get("Created"))?;
    r.closed_at = time_field(&place, "Resolved", row.get("Resolved"))?;
    Ok(Item::Record(r, place))
}

/// `12/Mar/24 9:41 AM;557058:…;The text` (time, author, text).
fn jira_comment(place: &str, c: &str) -> Read<ImportComment> {
    let mut parts = c.splitn(3, ';');
    let (when, who, text) = (parts.next(), parts.next(), parts.next());
    let (Some(when), Some(who), Some(text)) = (when, who, text) else {
        let content = description(c).ok_or_else(|| malformed(place, "Comment: empty"))?;
        return Ok(ImportComment { author: None, content, created_at: None });
    };
    let Some(at) = time(when) else {
        let content = description(c).ok_or_else(|| malformed(place, "Comment: empty"))?;
        return Ok(ImportComment { author: None, content, created_at: None });
    };
    let content = description(text).ok_or_else(|| malformed(place, "Comment: empty text"))?;
    Ok(ImportComment {
        author: Some(who.trim().to_string()).filter(|w| !w.is_empty()),
        content,
        created_at: Some(at),
    })
}

// ---- Linear --------------------------------------------------------------

/// A Linear CSV export (Settings → Import / Export → Export CSV): `ID`,
/// `Title`, `Description`, `Status`, `Priority`, `Assignee`, `Labels`
/// (comma-separated), `Created`, `Completed`, `Canceled`, `Archived`,
/// `Parent issue`, `Blocked By`.
pub(super) fn read_linear(path: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    let mut table = Table::open(path)?;
    table.require(&["ID", "Title"])?;
    table.rows(&mut |row, place| each(linear_row(row, place)?))
}

/// Linear puts a `'` before a text that a spreadsheet would read as a
/// formula (`'=…`, `'+…`); the text is without it.
fn unquote(s: &str) -> &str {
    match s.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@']) => rest,
        _ => s,
    }
}

fn linear_row(row: &Row, place: String) -> Read<Item> {
    let id = row.get("ID");
    if id.is_empty() {
        return Err(malformed(place, "ID: empty"));
    }
    if !row.get("Archived").is_empty() {
        return Ok(Item::Skip { id: id.to_string(), place, reason: "archived in Linear".into() });
    }
    let mut r: ImportRecord = record(id, title(&place, unquote(row.get("Title")))?);
    r.description = description(unquote(row.get("Description")));
    let status = row.get("Status");
    let canceled = !row.get("Canceled").is_empty() || is_canceled(status);
    r.status = if canceled || !row.get("Completed").is_empty() {
        TaskStatus::Done
    } else {
        status_from_words(status)
    };
    if let Some(p) = priority_from_words(row.get("Priority")) {
        r.priority = p;
    }
    let mut names: Vec<String> =
        row.get("Labels").split(',').map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
    if names.iter().any(|l| l.eq_ignore_ascii_case("bug")) {
        r.kind = TaskType::Bug;
    }
    if canceled {
        names.push("canceled".into());
    }
    r.labels = labels(names.iter().map(String::as_str));
    r.assignee = Some(row.get("Assignee").to_string()).filter(|a| !a.is_empty());
    r.parent = Some(row.get("Parent issue").to_string()).filter(|p| !p.is_empty());
    // `Blocks` and `Blocked By` list each block twice: it is taken from
    // the blocked side, as a dependency.
    for (column, link_type) in [("Blocked By", LinkType::DependsOn), ("Related to", LinkType::RelatesTo)] {
        for target in row.get(column).split(',').map(str::trim).filter(|t| !t.is_empty()) {
            r.links.push(ImportLink { link_type, target: target.to_string() });
        }
    }
    r.created_at = time_field(&place, "Created", row.get("Created"))?;
    let closed = if row.get("Completed").is_empty() { row.get("Canceled") } else { row.get("Completed") };
    r.closed_at = time_field(&place, "Completed", closed)?;
    Ok(Item::Record(r, place))
}
