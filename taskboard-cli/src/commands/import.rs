//! `taskboard import --from FORMAT PATH --project SLUG`: the files of
//! another tracker read (`crate::import`) and sent to the board's import
//! endpoint in batches, the same way on a local board and a server.
//!
//! The file is read twice. The first reading checks every record and
//! notes the ids, so a malformed record stops the import before anything
//! is applied; the second streams batches of records to the board, each
//! applied whole. A record that names a record of a later batch (as
//! parent or link) is sent again once every batch is in, so its
//! references are made; nothing but those records is kept in memory.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use taskboard_core::api::{
    ImportAction, ImportItem, ImportPlan, ImportRecord, ImportRequest, ImportTasks, MAX_IMPORT_RECORDS,
};
use taskboard_core::validate::Slug;
use taskboard_core::{Error, Perform, Result};

use super::helpers::{bar, finish};
use crate::import::{Format, Item, Malformed, read};
use crate::output::Out;

/// Records per request: well under the endpoint's limit, and under the
/// server's limit on a JSON body (1 MiB by default) in bytes.
const BATCH_RECORDS: usize = 500;
const BATCH_BYTES: usize = 768 * 1024;

#[derive(Default)]
struct Batch {
    records: Vec<ImportRecord>,
    places: Vec<String>,
    bytes: usize,
    skipped: Vec<ImportItem>,
}

fn malformed(m: Malformed) -> Error {
    Error::invalid(&m.place, format!("{} (nothing was imported)", m.reason))
}

pub(super) struct Options {
    pub format: Format,
    pub path: PathBuf,
    pub project: String,
    pub dry_run: bool,
    pub create_members: bool,
}

pub(super) async fn import<B: Perform>(b: &B, o: Options, out: Out) -> Result<()> {
    let project = b.find_project(&o.project).await?;
    let source = Slug::new(o.format.source()).map_err(|e| e.at("from"))?;

    // First reading: every record checked, ids noted.
    let (format, path) = (o.format, o.path.clone());
    let (ids, total) = tokio::task::spawn_blocking(move || {
        let mut ids = HashSet::new();
        let mut total = 0u64;
        read(format, &path, &mut |item| {
            if let Item::Record(r, place) = item {
                if !ids.insert(r.id.clone()) {
                    return Err(Malformed { place, reason: format!("the id {:?} appears twice", r.id) });
                }
                total += 1;
            }
            Ok(())
        })
        .map(|()| (ids, total))
    })
    .await
    .map_err(Error::internal)?
    .map_err(malformed)?;

    let progress = bar(if o.dry_run { "planning" } else { "importing" }, "records");
    if let Some(p) = &progress {
        p.set_length(total);
    }
    // Second reading, in batches over a short queue: memory holds a
    // batch or two, whatever the size of the file.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(2);
    let (format, path) = (o.format, o.path.clone());
    let reader = tokio::task::spawn_blocking(move || {
        let mut batch = Batch::default();
        let stopped = || Malformed { place: String::new(), reason: "stopped".into() };
        read(format, &path, &mut |item| {
            match item {
                Item::Record(r, place) => {
                    batch.bytes += serde_json::to_vec(&r).map_or(0, |v| v.len()) + 1;
                    batch.records.push(r);
                    batch.places.push(place);
                }
                Item::Skip { id, place: _, reason } => batch.skipped.push(ImportItem {
                    id,
                    action: ImportAction::Skip,
                    key: None,
                    task_id: None,
                    changes: Vec::new(),
                    reason: Some(reason),
                    unresolved: Vec::new(),
                    notes: Vec::new(),
                }),
            }
            if batch.records.len() >= BATCH_RECORDS.min(MAX_IMPORT_RECORDS) || batch.bytes >= BATCH_BYTES {
                tx.blocking_send(std::mem::take(&mut batch)).map_err(|_| stopped())?;
            }
            Ok(())
        })?;
        if !batch.records.is_empty() || !batch.skipped.is_empty() {
            tx.blocking_send(batch).map_err(|_| stopped())?;
        }
        Ok::<(), Malformed>(())
    });

    let mut plan = ImportPlan { dry_run: o.dry_run, ..Default::default() };
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut again: Vec<(ImportRecord, String)> = Vec::new();
    let send = async |records: Vec<ImportRecord>, places: &[String]| {
        let req = ImportRequest {
            source: source.clone(),
            dry_run: o.dry_run,
            create_members: o.create_members,
            records,
        };
        b.call::<ImportTasks>(project.id, (), req).await.map_err(|e| at_record(e, places))
    };
    let mut failure = None;
    while let Some(batch) = rx.recv().await {
        let n = batch.records.len() as u64;
        let answer = match send(batch.records.clone(), &batch.places).await {
            Ok(a) => a,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        for (item, (record, place)) in answer.items.iter().zip(batch.records.into_iter().zip(batch.places)) {
            // Names of records still to come: sent again at the end.
            if !o.dry_run && item.unresolved.iter().any(|u| ids.contains(u)) {
                again.push((record, place));
            }
        }
        for mut item in answer.items {
            item.unresolved.retain(|u| !ids.contains(u));
            index.insert(item.id.clone(), plan.items.len());
            plan.items.push(item);
        }
        plan.labels_created.extend(answer.labels_created);
        plan.members_created.extend(answer.members_created);
        plan.people_unmatched.extend(answer.people_unmatched);
        plan.items.extend(batch.skipped);
        if let Some(p) = &progress {
            p.inc(n);
        }
    }
    drop(rx);
    let read_result = reader.await.map_err(Error::internal)?;
    if let Some(e) = failure {
        finish(progress);
        return Err(e);
    }
    read_result.map_err(malformed)?;

    for chunk in again.chunks(BATCH_RECORDS) {
        let (records, places): (Vec<_>, Vec<_>) = chunk.iter().cloned().unzip();
        let answer = send(records, &places).await?;
        for item in answer.items {
            let Some(&i) = index.get(&item.id) else { continue };
            let first = &mut plan.items[i];
            first.unresolved = item.unresolved;
            first.notes.extend(item.notes);
            if item.action == ImportAction::Update && first.action != ImportAction::Create {
                first.action = ImportAction::Update;
                for c in item.changes {
                    if !first.changes.contains(&c) {
                        first.changes.push(c);
                    }
                }
            }
        }
        plan.labels_created.extend(answer.labels_created);
        plan.members_created.extend(answer.members_created);
        plan.people_unmatched.extend(answer.people_unmatched);
    }
    finish(progress);
    plan.labels_created.sort();
    plan.labels_created.dedup();
    plan.members_created.sort();
    plan.members_created.dedup();
    plan.people_unmatched.sort();
    plan.people_unmatched.dedup();
    for it in &plan.items {
        match it.action {
            ImportAction::Create => plan.created += 1,
            ImportAction::Update => plan.updated += 1,
            ImportAction::Unchanged => plan.unchanged += 1,
            ImportAction::Skip => plan.skipped += 1,
        }
    }
    report(&plan, &project.slug, o.format.source(), out);
    Ok(())
}

/// A refusal of the board that names `records[i]` names the file and
/// line of that record instead.
fn at_record(e: Error, places: &[String]) -> Error {
    let detail = e.detail().to_string();
    let Some(rest) = detail.strip_prefix("records[") else { return e };
    let Some((n, tail)) = rest.split_once(']') else { return e };
    match n.parse::<usize>().ok().and_then(|n| places.get(n)) {
        Some(place) => {
            Error::new(e.kind(), format!("{place}: {}", tail.trim_start_matches(['.', ':']).trim()))
        }
        None => e,
    }
}

fn report(plan: &ImportPlan, project: &str, source: &str, out: Out) {
    let mut lines = Vec::new();
    for it in &plan.items {
        let show = plan.dry_run && it.action != ImportAction::Unchanged
            || it.action == ImportAction::Skip
            || !it.notes.is_empty()
            || !it.unresolved.is_empty();
        if !show {
            continue;
        }
        let mut line = format!("{:<9} {}", it.action.as_str(), it.id);
        if let Some(k) = &it.key {
            line.push_str(&format!(" → {k}"));
        }
        if !it.changes.is_empty() {
            line.push_str(&format!(" ({})", it.changes.join(", ")));
        }
        if let Some(r) = &it.reason {
            line.push_str(&format!(": {r}"));
        }
        for n in &it.notes {
            line.push_str(&format!("; {n}"));
        }
        if !it.unresolved.is_empty() {
            line.push_str(&format!("; not found: {}", it.unresolved.join(", ")));
        }
        lines.push(line);
    }
    let counts = format!(
        "{} created, {} updated, {} unchanged, {} skipped",
        plan.created, plan.updated, plan.unchanged, plan.skipped
    );
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    if plan.dry_run {
        text.push_str(&format!(
            "dry run of the import from {source} into {project}: {counts}; nothing was changed"
        ));
    } else {
        text.push_str(&format!("imported from {source} into {project}: {counts}"));
    }
    if !plan.labels_created.is_empty() {
        text.push_str(&format!("\nlabels created: {}", plan.labels_created.join(", ")));
    }
    if !plan.members_created.is_empty() {
        text.push_str(&format!("\ninactive members created: {}", plan.members_created.join(", ")));
    }
    if !plan.people_unmatched.is_empty() {
        text.push_str(&format!(
            "\npeople who match no member, their tasks left unassigned: {}\n  \
             (create them first with `taskboard member create --type human`, or import with --create-members)",
            plan.people_unmatched.join(", ")
        ));
    }
    out.done(plan, &text);
}
