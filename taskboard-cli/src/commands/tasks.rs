//! `taskboard task …`, `step …` and `label …`.

use taskboard_core::api::{
    AddTaskLabel, AssignRequest, AssignTask, ClaimRequest, ClaimTask, CreateLabel, CreateLink, CreateStep,
    CreateTask, DeleteLabel, DeleteLink, DeleteStep, DeleteTask, DiscardTask, HeartbeatTask, LabelPatch,
    LeaseRequest, ListActions, ListLabels, ListLinks, ListMessages, ListSteps, ListTasks, MergeTask,
    MessageFilter, NewLabel, NewLink, NewStep, NewTask, Optional, Page, Patch, ProjectIdQuery, ReadyQuery,
    ReadyTasks, RejectRequest, RejectTask, ReleaseRequest, ReleaseTask, RemoveTaskLabel, StepPatch, TakeTask,
    TaskFilter, TaskPatch, UnwatchTask, UpdateLabel, UpdateStep, UpdateTask, WatchTask,
};
use taskboard_core::validate::{Color, LabelName, LongText, Reason, Title};
use taskboard_core::{Perform, Result};

use crate::cli::{LabelCmd, MessageCmd, Place, StepCmd, TaskCmd, TaskLabelCmd};
use crate::output::{LATEST_COMMENTS, Out};

use super::helpers::{find_label, find_link, find_step, member_id, page, patch, task_id, valid};

pub(super) fn label_names(labels: Vec<String>) -> Result<Vec<LabelName>> {
    labels.into_iter().map(|l| valid("labels", LabelName::new(l))).collect()
}

pub(super) async fn task<B: Perform>(b: &B, c: TaskCmd, out: Out) -> Result<()> {
    match c {
        TaskCmd::List { project, status, assignee, reviewer, label, q, kind, priority, parent, page: p } => {
            let project_id = match project {
                Some(r) => Some(b.find_project(&r).await?.id),
                None => None,
            };
            let filter = TaskFilter {
                project_id,
                status,
                assignee_id: member_id(b, assignee.as_deref()).await?,
                label,
                q,
                reviewer_id: member_id(b, reviewer.as_deref()).await?,
                kind,
                priority,
                parent_id: task_id(b, parent.as_deref()).await?,
                page: page(p),
            };
            let tasks = b.call::<ListTasks>((), filter, ()).await?;
            out.list(&tasks);
            out.next_page(tasks.next.as_deref());
        }
        TaskCmd::Show { task } => {
            let t = b.find_task(&task).await?;
            if out.json || out.quiet {
                out.item(&t);
                return Ok(());
            }
            let links = b.call::<ListLinks>(t.id, Page::default(), ()).await?;
            // One more than shown, to tell whether there are more.
            let filter = MessageFilter {
                task_id: Some(t.id),
                limit: Some(LATEST_COMMENTS as u32 + 1),
                ..MessageFilter::default()
            };
            let comments = b.call::<ListMessages>((), filter, ()).await?;
            out.task(&t, &links, &comments)
        }
        TaskCmd::Create {
            project,
            title,
            description,
            kind,
            status,
            priority,
            labels,
            parent,
            assignee,
            reviewer,
            depends_on,
        } => {
            let project = b.find_project(&project).await?;
            let mut new = NewTask::titled(valid("title", Title::new(title))?);
            new.description = description.map(LongText::new).transpose().map_err(|e| e.at("description"))?;
            new.kind = kind.unwrap_or(new.kind);
            new.status = status.unwrap_or(new.status);
            new.priority = priority.unwrap_or(new.priority);
            new.labels = label_names(labels)?;
            new.parent_id = task_id(b, parent.as_deref()).await?;
            new.assignee_id = member_id(b, assignee.as_deref()).await?;
            new.reviewer_id = member_id(b, reviewer.as_deref()).await?;
            for d in depends_on {
                new.depends_on.push(b.find_task(&d).await?.id);
            }
            out.item(&b.call::<CreateTask>((), ProjectIdQuery { project_id: project.id }, new).await?)
        }
        TaskCmd::Update {
            task,
            title,
            description,
            clear_description,
            kind,
            status,
            priority,
            labels,
            clear_labels,
            assignee,
            clear_assignee,
            reviewer,
            clear_reviewer,
            parent,
            clear_parent,
            position,
        } => {
            let id = b.find_task(&task).await?.id;
            let labels = if clear_labels {
                Patch::Value(Vec::new())
            } else {
                patch((!labels.is_empty()).then(|| label_names(labels)).transpose()?, false)
            };
            let patch = TaskPatch {
                title: patch(title.map(Title::new).transpose().map_err(|e| e.at("title"))?, false),
                description: patch(
                    description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                    clear_description,
                ),
                kind: patch(kind, false),
                status: patch(status, false),
                priority: patch(priority, false),
                labels,
                assignee_id: patch(member_id(b, assignee.as_deref()).await?, clear_assignee),
                reviewer_id: patch(member_id(b, reviewer.as_deref()).await?, clear_reviewer),
                parent_id: patch(task_id(b, parent.as_deref()).await?, clear_parent),
                position: patch(position, false),
            };
            out.item(&b.call::<UpdateTask>(id, (), patch).await?)
        }
        TaskCmd::Delete { task } => {
            let t = b.find_task(&task).await?;
            out.done(&b.call::<DeleteTask>(t.id, (), ()).await?, &format!("deleted {}", t.key))
        }
        TaskCmd::Comment { task, content, attach, mentions, reply_to } => {
            let post = MessageCmd::Post {
                place: Place { project: None, chat: None, task: Some(task) },
                content,
                reply_to,
                attach,
                mentions,
                thinking: None,
                voice_url: None,
            };
            super::messages::message(b, post, out).await?
        }
        TaskCmd::Take { task, lease } => {
            let id = b.find_task(&task).await?.id;
            let query = LeaseRequest { lease_seconds: lease };
            out.item(&b.call::<TakeTask>(id, query, Optional(None)).await?)
        }
        TaskCmd::Ready { project, label, limit } => {
            let project_id = match project {
                Some(r) => Some(b.find_project(&r).await?.id),
                None => None,
            };
            out.list(&b.call::<ReadyTasks>((), ReadyQuery { project_id, label, limit }, ()).await?)
        }
        TaskCmd::Claim { project, labels, lease } => {
            let project_id = match project {
                Some(r) => Some(b.find_project(&r).await?.id),
                None => None,
            };
            let labels = (!labels.is_empty()).then(|| label_names(labels)).transpose()?;
            let request = ClaimRequest { project_id, labels, lease_seconds: lease };
            match b.call::<ClaimTask>((), (), Optional(Some(request))).await? {
                Some(t) => out.item(&t),
                None => out.done(&serde_json::Value::Null, "no task is ready"),
            }
        }
        TaskCmd::Heartbeat { task, lease } => {
            let id = b.find_task(&task).await?.id;
            let body = LeaseRequest { lease_seconds: lease };
            out.item(&b.call::<HeartbeatTask>(id, (), Optional(Some(body))).await?)
        }
        TaskCmd::Release { task, reason } => {
            let id = b.find_task(&task).await?.id;
            let reason = reason.map(|r| valid("reason", Reason::new(r))).transpose()?;
            out.item(&b.call::<ReleaseTask>(id, (), Optional(Some(ReleaseRequest { reason }))).await?)
        }
        TaskCmd::Merge { task, method } => {
            let t = b.find_task(&task).await?;
            let run = b.call::<MergeTask>(t.id, (), taskboard_core::review::MergeRequest { method }).await?;
            let how = serde_json::to_value(method).ok().and_then(|v| v.as_str().map(String::from));
            out.done(
                &run,
                &format!(
                    "landing of {} queued ({}): run {}; `taskboard run logs {} --follow` shows it",
                    t.key,
                    how.unwrap_or_default(),
                    run.id,
                    run.id
                ),
            )
        }
        TaskCmd::Discard { task } => {
            let t = b.find_task(&task).await?;
            let run = b.call::<DiscardTask>(t.id, (), ()).await?;
            out.done(&run, &format!("{} is todo again; run {} deletes its branch", t.key, run.id))
        }
        TaskCmd::Reject { task, reason } => {
            let t = b.find_task(&task).await?;
            let request = RejectRequest { reason: valid("reason", Reason::new(reason))? };
            out.done(
                &b.call::<RejectTask>(t.id, (), request).await?,
                &format!("{} sent back to the backlog", t.key),
            )
        }
        TaskCmd::Assign { task, member } => {
            let id = b.find_task(&task).await?.id;
            let assignee_id = b.find_member(&member).await?.id;
            out.item(&b.call::<AssignTask>(id, (), AssignRequest { assignee_id }).await?)
        }
        TaskCmd::Watch { task } => {
            let t = b.find_task(&task).await?;
            out.done(&b.call::<WatchTask>(t.id, (), ()).await?, &format!("watching {}", t.key))
        }
        TaskCmd::Unwatch { task } => {
            let t = b.find_task(&task).await?;
            out.done(&b.call::<UnwatchTask>(t.id, (), ()).await?, &format!("no longer watching {}", t.key))
        }
        TaskCmd::Label(TaskLabelCmd::Add { task, label }) => {
            let t = b.find_task(&task).await?;
            let l = find_label(b, &label).await?;
            out.done(
                &b.call::<AddTaskLabel>((t.id, l.id), (), ()).await?,
                &format!("{} labelled {}", t.key, l.name),
            )
        }
        TaskCmd::Label(TaskLabelCmd::Remove { task, label }) => {
            let t = b.find_task(&task).await?;
            let l = find_label(b, &label).await?;
            out.done(
                &b.call::<RemoveTaskLabel>((t.id, l.id), (), ()).await?,
                &format!("label {} taken off {}", l.name, t.key),
            )
        }
        TaskCmd::Link { task, target, link_type } => {
            let id = b.find_task(&task).await?.id;
            let target_id = b.find_task(&target).await?.id;
            out.item(&b.call::<CreateLink>(id, (), NewLink { target_id, link_type }).await?)
        }
        TaskCmd::Links { task } => {
            let id = b.find_task(&task).await?.id;
            out.list(&b.call::<ListLinks>(id, Page::default(), ()).await?)
        }
        TaskCmd::Unlink { task, link } => {
            let t = b.find_task(&task).await?;
            let link = find_link(b, t.id, &link).await?;
            out.done(
                &b.call::<DeleteLink>((t.id, link), (), ()).await?,
                &format!("link {link} of {} deleted", t.key),
            )
        }
        TaskCmd::Actions { task } => {
            let id = b.find_task(&task).await?.id;
            out.list(&b.call::<ListActions>(id, Page::default(), ()).await?)
        }
    }
    Ok(())
}

pub(super) async fn step<B: Perform>(b: &B, c: StepCmd, out: Out) -> Result<()> {
    match c {
        StepCmd::List { task } => {
            let id = b.find_task(&task).await?.id;
            out.list(&b.call::<ListSteps>(id, Page::default(), ()).await?)
        }
        StepCmd::Add { task, title, title_flag } => {
            let title = title.or(title_flag).unwrap_or_default();
            let id = b.find_task(&task).await?.id;
            out.item(
                &b.call::<CreateStep>(id, (), NewStep { title: valid("title", Title::new(title))? }).await?,
            )
        }
        StepCmd::Update { task, step, title, done, position } => {
            let id = b.find_task(&task).await?.id;
            let s = find_step(b, id, &step).await?;
            let patch = StepPatch {
                title: patch(title.map(Title::new).transpose().map_err(|e| e.at("title"))?, false),
                done: patch(done, false),
                position: patch(position, false),
            };
            out.item(&b.call::<UpdateStep>((id, s.id), (), patch).await?)
        }
        StepCmd::Done { task, step } => {
            let id = b.find_task(&task).await?.id;
            let s = find_step(b, id, &step).await?;
            out.item(
                &b.call::<UpdateStep>(
                    (id, s.id),
                    (),
                    StepPatch { done: Patch::Value(true), ..Default::default() },
                )
                .await?,
            )
        }
        StepCmd::Delete { task, step } => {
            let id = b.find_task(&task).await?.id;
            let s = find_step(b, id, &step).await?;
            out.done(&b.call::<DeleteStep>((id, s.id), (), ()).await?, &format!("deleted step {:?}", s.title))
        }
    }
    Ok(())
}

pub(super) async fn label<B: Perform>(b: &B, c: LabelCmd, out: Out) -> Result<()> {
    match c {
        LabelCmd::List { page: p } => out.list(&b.call::<ListLabels>((), page(p), ()).await?),
        LabelCmd::Create { name, color } => {
            let new = NewLabel {
                name: valid("name", LabelName::new(name))?,
                color: match color {
                    Some(c) => valid("color", Color::new(c))?,
                    None => Color::default(),
                },
            };
            out.item(&b.call::<CreateLabel>((), (), new).await?)
        }
        LabelCmd::Update { label, name, color } => {
            let l = find_label(b, &label).await?;
            let patch = LabelPatch {
                name: patch(name.map(LabelName::new).transpose().map_err(|e| e.at("name"))?, false),
                color: patch(color.map(Color::new).transpose().map_err(|e| e.at("color"))?, false),
            };
            out.item(&b.call::<UpdateLabel>(l.id, (), patch).await?)
        }
        LabelCmd::Delete { label } => {
            let l = find_label(b, &label).await?;
            out.done(&b.call::<DeleteLabel>(l.id, (), ()).await?, &format!("deleted label {}", l.name))
        }
    }
    Ok(())
}
