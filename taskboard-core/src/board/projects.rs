//! Projects and project membership (docs/rules.md, projects).

use serde_json::json;
use uuid::Uuid;

use super::pages::{IndexList, Item, ItemFn, List};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{AuthorType, Project, ProjectMember, ProjectRole, ProjectStatus};
use crate::records::{ChatRecord, MessageRecord, ProjectRecord, RecordWrites, Records};
use crate::storage::Direction;
use crate::storage::codec::{Key, decode, uuid_at};
use crate::storage::tables::{
    CHAT_MESSAGES, CHATS, PROJECT_FILE_NAME, PROJECT_MEMBERS, PROJECT_SLUG, PROJECTS, TASK_NUMBER,
};
use crate::validate::Slug;
use crate::wire::{CursorKind, NewProject, Page, ProjectPatch};

fn slug_free(r: &(impl Records + ?Sized), slug: &str, except: Option<Uuid>) -> Result<()> {
    match r.project_by_slug(slug)? {
        Some(p) if Some(p.id) != except => {
            Err(Error::conflict(format!("project slug {slug:?} is already taken")))
        }
        _ => Ok(()),
    }
}

impl Board {
    /// `GET /projects`: active projects by creation time; archived ones
    /// too with `include_archived` (docs/rules.md, lists).
    pub fn list_projects(&self, include_archived: bool, page: Page) -> List<Project> {
        self.index_list(projects_list(include_archived), page, |_| Ok(()))
    }

    /// `GET /projects?slug=`: the project with this slug, found by the
    /// slug's index, as a list of none or one (an archived one only on
    /// request), paged as the whole list is.
    pub fn projects_by_slug(&self, slug: &Slug, include_archived: bool, page: Page) -> List<Project> {
        let slug = slug.to_string();
        List::new(self, CursorKind::Projects, page, move |r, start, out| {
            let found =
                r.project_by_slug(&slug)?.filter(|p| include_archived || p.status == ProjectStatus::Active);
            match found {
                Some(p)
                    if start.skip == 0
                        && start.after.as_deref().is_none_or(|a| a < p.id.as_bytes().as_slice()) =>
                {
                    let key = p.id.as_bytes().to_vec();
                    out.push(Item::Value(p.to_wire()), &|| key.clone()).map(|_| ())
                }
                _ => Ok(()),
            }
        })
    }

    pub async fn get_project(&self, id: Uuid) -> Result<Project> {
        self.read(move |r| Ok(r.project_required(id)?.to_wire())).await
    }

    /// `POST /projects`: creates the project with its main chat; the
    /// creator becomes a project owner (docs/rules.md, projects).
    pub async fn create_project(&self, actor: &Actor, new: NewProject) -> Result<Project> {
        let creator = actor.id();
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            if !new.repo_urls.is_empty() {
                check_repository_rights(tx, &actor)?;
            }
            slug_free(tx.w, &new.slug, None)?;
            let id = Uuid::now_v7();
            let chat = ChatRecord { id: Uuid::now_v7(), project_id: id, created_at: tx.now };
            let p = ProjectRecord {
                id,
                name: new.name.to_string(),
                slug: new.slug.to_string(),
                description: new.description.map(String::from),
                repo_urls: new.repo_urls,
                status: ProjectStatus::Active,
                task_counter: 0,
                chat_id: chat.id,
                auto_assign: new.auto_assign,
                created_by: creator,
                created_at: tx.now,
                landing: Default::default(),
            };
            tx.w.put_project(None, &p)?;
            tx.w.put_record(CHATS, chat.id.as_bytes(), &chat)?;
            tx.w.put_record(PROJECT_MEMBERS, &Key::new().uuid(id).uuid(creator), &ProjectRole::Owner)?;
            tx.emit_all(EventKind::ProjectCreated, p.to_wire())?;
            Ok(p.to_wire())
        })
        .await
    }

    /// `PATCH /projects/{id}`.
    pub async fn update_project(&self, actor: &Actor, id: Uuid, patch: ProjectPatch) -> Result<Project> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.project_required(id)?;
            if let crate::wire::Patch::Value(urls) = &patch.repo_urls
                && *urls != old.repo_urls
            {
                check_repository_rights(tx, &actor)?;
            }
            let mut p = old.clone();
            p.landing = landing_settings(tx, &actor, &old.landing, &patch)?;
            if let Some(name) = patch.name.value() {
                p.name = name.to_string();
            }
            if let Some(slug) = patch.slug.value() {
                slug_free(tx.w, &slug, Some(id))?;
                p.slug = slug.to_string();
            }
            if let Some(description) = patch.description.change() {
                p.description = description.map(String::from);
            }
            if let Some(urls) = patch.repo_urls.value() {
                p.repo_urls = urls;
            }
            if let Some(status) = patch.status.value() {
                p.status = status;
            }
            if let Some(auto) = patch.auto_assign.value() {
                p.auto_assign = auto;
            }
            tx.w.put_project(Some(&old), &p)?;
            tx.emit_all(EventKind::ProjectUpdated, p.to_wire())?;
            Ok(p.to_wire())
        })
        .await
    }

    /// `DELETE /projects/{id}`: owners only; removes the project with its
    /// tasks, steps, links, messages, chat and files, blobs included, in
    /// one transaction (docs/rules.md, projects).
    pub async fn delete_project(&self, actor: &Actor, id: Uuid) -> Result<()> {
        actor.require_owner("delete projects")?;
        self.write_as(actor.request(), move |tx| {
            let p = tx.w.project_required(id)?;
            let task_ids = tx.w.id_values_with_prefix(TASK_NUMBER, id.as_bytes())?;
            for task_id in task_ids {
                if let Some(t) = tx.w.task(task_id)? {
                    Board::delete_task_in(tx, &t)?;
                }
            }
            let chat_messages =
                tx.w.ids_with_prefix(CHAT_MESSAGES, p.chat_id.as_bytes(), Direction::Forward)?;
            for mid in chat_messages {
                if let Some(m) = tx.w.message(mid)? {
                    let blobs = tx.w.delete_message(&m)?;
                    tx.dead_blobs.extend(blobs);
                }
            }
            tx.w.delete(CHATS, p.chat_id.as_bytes())?;
            let file_ids = tx.w.id_values_with_prefix(PROJECT_FILE_NAME, id.as_bytes())?;
            for fid in file_ids {
                if let Some(f) = tx.w.project_file(fid)? {
                    tx.w.delete_project_file(&f)?;
                    tx.dead_blobs.push(f.storage_name);
                }
            }
            for member in tx.w.project_member_ids(id)? {
                tx.w.delete(PROJECT_MEMBERS, &Key::new().uuid(id).uuid(member))?;
            }
            tx.w.delete(PROJECT_SLUG, p.slug.as_bytes())?;
            tx.w.delete(PROJECTS, id.as_bytes())?;
            tx.emit_all(EventKind::ProjectDeleted, json!({"id": id, "slug": p.slug}))?;
            Ok(())
        })
        .await
    }

    /// `GET /projects/{id}/members`, with project roles.
    pub fn project_members(&self, id: Uuid, page: Page) -> List<ProjectMember> {
        self.index_list(project_members_list(id), page, move |r| r.project_required(id).map(drop))
    }

    /// `POST /projects/{id}/members` (admin or owner; docs/rules.md, projects).
    pub async fn add_project_member(&self, actor: &Actor, project: Uuid, member: Uuid) -> Result<()> {
        actor.require_admin("add project members")?;
        self.write_as(actor.request(), move |tx| {
            tx.w.project_required(project)?;
            tx.w.active_member(member)?;
            if tx.w.project_role(project, member)?.is_some() {
                return Err(Error::conflict("the member is already in the project"));
            }
            tx.w.put_record(PROJECT_MEMBERS, &Key::new().uuid(project).uuid(member), &ProjectRole::Member)?;
            tx.emit_all(
                EventKind::ProjectMemberAdded,
                json!({"project_id": project, "member_id": member, "role": ProjectRole::Member}),
            )?;
            Ok(())
        })
        .await
    }

    /// `DELETE /projects/{id}/members/{member_id}` (admin or owner): a
    /// project owner cannot be removed (400).
    pub async fn remove_project_member(&self, actor: &Actor, project: Uuid, member: Uuid) -> Result<()> {
        actor.require_admin("remove project members")?;
        self.write_as(actor.request(), move |tx| {
            tx.w.project_required(project)?;
            match tx.w.project_role(project, member)? {
                None => Err(Error::not_found("the member is not in the project")),
                Some(ProjectRole::Owner) => {
                    Err(Error::bad_request("the project owner cannot be removed from the project"))
                }
                Some(ProjectRole::Member) => {
                    tx.w.delete(PROJECT_MEMBERS, &Key::new().uuid(project).uuid(member))?;
                    tx.emit_all(
                        EventKind::ProjectMemberRemoved,
                        json!({"project_id": project, "member_id": member}),
                    )?;
                    Ok(())
                }
            }
        })
        .await
    }

    /// Writes a system message (docs/rules.md, tasks) to a project's chat
    /// and emits its `message.new`.
    pub(crate) fn system_message(
        tx: &mut Tx<'_>,
        chat_id: uuid::Uuid,
        actor: uuid::Uuid,
        content: String,
    ) -> Result<()> {
        let mut m = system_record(tx, Some(chat_id), None, actor, content);
        Board::write_message(tx, &mut m, None).map(drop)
    }

    /// A system message among the comments of `task`, given as the
    /// transaction now holds it (its audience is taken from it, not read
    /// back), and its `message.new`.
    pub(crate) fn system_comment(
        tx: &mut Tx<'_>,
        task: &crate::records::TaskRecord,
        actor: uuid::Uuid,
        content: String,
    ) -> Result<()> {
        let mut m = system_record(tx, None, Some(task.id), actor, content);
        let audience = super::messages::comment_audience(task, &m);
        Board::write_message(tx, &mut m, Some(audience)).map(drop)
    }
}

/// A system message of `actor`'s doing, in a chat or a task's comments.
fn system_record(
    tx: &Tx<'_>,
    chat_id: Option<uuid::Uuid>,
    task_id: Option<uuid::Uuid>,
    actor: uuid::Uuid,
    content: String,
) -> MessageRecord {
    MessageRecord {
        chat_id,
        task_id,
        actor_id: Some(actor),
        ..MessageRecord::plain(tx.now, AuthorType::System, content)
    }
}

/// Projects by creation (their ids are time-ordered).
fn projects_list(include_archived: bool) -> IndexList<impl ItemFn<Project>> {
    IndexList::new(CursorKind::Projects, PROJECTS, &[], move |_, _, v| {
        let p: ProjectRecord = crate::storage::codec::decode(v)?;
        Ok((include_archived || p.status == ProjectStatus::Active).then(|| p.to_wire()))
    })
}

/// A project's members, keyed by member id, which orders them by creation.
fn project_members_list(project: Uuid) -> IndexList<impl ItemFn<ProjectMember>> {
    IndexList::new(CursorKind::ProjectMembers, PROJECT_MEMBERS, project.as_bytes(), |r, k, v| {
        let role: ProjectRole = decode(v)?;
        Ok(r.member(uuid_at(k, 0)?)?.map(|m| ProjectMember {
            id: m.id,
            name: m.name,
            slug: m.slug,
            kind: m.kind,
            role,
        }))
    })
}

/// The project's landing settings after `patch`: admins and owners only,
/// since a runner runs the check and pushes to the base (docs/rules.md,
/// review and land). Reviewers are active agents, by slug or id.
fn landing_settings(
    tx: &Tx<'_>,
    actor: &Actor,
    old: &crate::review::LandingSettings,
    patch: &ProjectPatch,
) -> Result<crate::review::LandingSettings> {
    use crate::wire::Patch;
    let touched = !patch.base_branch.is_absent()
        || !patch.check_command.is_absent()
        || !patch.on_conflict.is_absent()
        || !patch.reviewers.is_absent()
        || !patch.required_approvals.is_absent()
        || !patch.max_rounds.is_absent();
    if !touched {
        return Ok(old.clone());
    }
    if !super::rights::load_actor_member(tx, actor)?.role.is_admin() {
        return Err(Error::forbidden(
            "only an admin or owner may change a project's landing settings (base_branch, check_command, \
             on_conflict, reviewers, required_approvals, max_rounds): runners act on them",
        ));
    }
    let mut l = old.clone();
    let text = |field: &str, p: &Patch<String>, max: usize| -> Result<Option<Option<String>>> {
        match p {
            Patch::Absent => Ok(None),
            Patch::Null => Ok(Some(None)),
            Patch::Value(v) if v.trim().is_empty() || v.len() > max || v.contains(['\0', '\n']) => {
                Err(Error::invalid(field, format!("must be 1 to {max} bytes on one line")))
            }
            Patch::Value(v) => Ok(Some(Some(v.trim().to_string()))),
        }
    };
    if let Some(b) = text("base_branch", &patch.base_branch, 250)? {
        if let Some(problem) = b.as_deref().and_then(crate::review::branch_name_problem) {
            return Err(Error::invalid("base_branch", format!("{problem} (git's rules for a branch)")));
        }
        l.base_branch = b;
    }
    if let Some(c) = text("check_command", &patch.check_command, 2000)? {
        l.check_command = c;
    }
    if let Patch::Value(o) = &patch.on_conflict {
        l.on_conflict = *o;
    }
    match &patch.reviewers {
        Patch::Absent => {}
        Patch::Null => l.reviewers.clear(),
        Patch::Value(names) => {
            let mut ids = Vec::new();
            for name in names {
                let found = match name.parse::<Uuid>() {
                    Ok(id) => tx.w.member(id)?,
                    Err(_) => tx.w.member_by_slug(name)?,
                };
                match found {
                    Some(m) if m.is_active && m.is_agent() => {
                        if !ids.contains(&m.id) {
                            ids.push(m.id);
                        }
                    }
                    _ => return Err(Error::invalid("reviewers", format!("{name} is not an active agent"))),
                }
            }
            l.reviewers = ids;
        }
    }
    if let Patch::Value(n) = patch.required_approvals {
        if n > 10 {
            return Err(Error::invalid("required_approvals", "must be 0 to 10"));
        }
        l.required_approvals = n;
    }
    if let Patch::Value(n) = patch.max_rounds {
        if !(1..=20).contains(&n) {
            return Err(Error::invalid("max_rounds", "must be 1 to 20"));
        }
        l.max_rounds = n;
    }
    Ok(l)
}

/// A project's repository is where runners fetch code that agents run
/// with the runner's rights: only admins and owners choose it
/// (docs/decisions.md, 20.f).
fn check_repository_rights(tx: &Tx<'_>, actor: &Actor) -> Result<()> {
    if super::rights::load_actor_member(tx, actor)?.role.is_admin() {
        return Ok(());
    }
    Err(Error::forbidden(
        "only an admin or owner may set a project's repo_urls: runners run agents on that code",
    ))
}
