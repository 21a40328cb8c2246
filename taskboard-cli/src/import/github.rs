//! GitHub Issues: the JSON array `gh issue list --state all --json
//! number,title,body,state,labels,assignees,author,comments,createdAt,closedAt,milestone`
//! prints (the fields of the GitHub CLI's `issue list --json`). The array
//! is read one issue at a time.

use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use taskboard_core::api::ImportComment;
use taskboard_core::model::{TaskStatus, TaskType};

use super::{
    Item, Malformed, Read, description, display, labels, malformed, priority_from_words, record, time_field,
    title,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Issue {
    number: u64,
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    labels: Vec<Named>,
    #[serde(default)]
    assignees: Vec<Person>,
    #[serde(default)]
    comments: Vec<Comment>,
    created_at: Option<String>,
    closed_at: Option<String>,
    milestone: Option<Milestone>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Milestone {
    title: String,
}

#[derive(Deserialize)]
struct Person {
    login: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Comment {
    author: Option<Person>,
    #[serde(default)]
    body: String,
    created_at: Option<String>,
}

pub(super) fn read(path: &Path, each: &mut dyn FnMut(Item) -> Read<()>) -> Read<()> {
    let name = display(path);
    let file = std::fs::File::open(path).map_err(|e| malformed(&name, format!("cannot open: {e}")))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut failure = None;
    let seed = Each { name: &name, each, failure: &mut failure };
    let outcome = seed.deserialize(&mut de).and_then(|()| de.end());
    if let Some(f) = failure {
        return Err(f);
    }
    outcome.map_err(|e| malformed(format!("{name}:{}", e.line()), e))
}

/// Hands each element of the top-level array over as it is read.
struct Each<'a> {
    name: &'a str,
    each: &'a mut dyn FnMut(Item) -> Read<()>,
    failure: &'a mut Option<Malformed>,
}

impl<'de> DeserializeSeed<'de> for Each<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Each<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the array of issues `gh issue list --json` prints")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(issue) = seq.next_element::<Issue>()? {
            let place = format!("{}: issue [{i}] #{}", self.name, issue.number);
            let done = item(issue, place).and_then(|it| (self.each)(it));
            if let Err(e) = done {
                *self.failure = Some(e.clone());
                return Err(serde::de::Error::custom(e));
            }
            i += 1;
        }
        Ok(())
    }
}

fn item(i: Issue, place: String) -> Read<Item> {
    let mut r = record(i.number.to_string(), title(&place, &i.title)?);
    r.description = description(&i.body);
    r.status = if i.state.eq_ignore_ascii_case("closed") { TaskStatus::Done } else { TaskStatus::Todo };
    let mut names: Vec<String> = i.labels.iter().map(|l| l.name.clone()).collect();
    for n in &names {
        if let Some(p) = priority_from_words(n) {
            r.priority = p;
        }
        match n.to_lowercase().as_str() {
            "bug" => r.kind = TaskType::Bug,
            "epic" => r.kind = TaskType::Epic,
            _ => {}
        }
    }
    names.extend(i.milestone.map(|m| m.title));
    r.labels = labels(names.iter().map(String::as_str));
    r.assignee = i.assignees.first().map(|a| a.login.clone());
    for (j, c) in i.comments.iter().enumerate() {
        let Some(content) = description(&c.body) else { continue };
        let created_at = match &c.created_at {
            Some(t) => time_field(&place, &format!("comments[{j}].createdAt"), t)?,
            None => None,
        };
        r.comments.push(ImportComment {
            author: c.author.as_ref().map(|a| a.login.clone()),
            content,
            created_at,
        });
    }
    if let Some(t) = &i.created_at {
        r.created_at = time_field(&place, "createdAt", t)?;
    }
    if let Some(t) = &i.closed_at {
        r.closed_at = time_field(&place, "closedAt", t)?;
    }
    Ok(Item::Record(r, place))
}
