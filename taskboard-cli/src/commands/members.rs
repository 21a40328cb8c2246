//! `taskboard member …` and `project …`.

use taskboard_core::api::{
    AddProjectMember, CreateMember, CreateProject, DeleteMember, DeleteProject, ListMembers,
    ListProjectMembers, ListProjects, LogoutEverywhere, MemberListQuery, MemberPatch, NewMember, NewPassword,
    NewProject, NewProjectMember, Page, Patch, ProjectListQuery, ProjectPatch, RegenerateToken,
    RemoveProjectMember, RevokeToken, SetMyStatus, SetPassword, StatusQuery, UpdateMember, UpdateProject,
};
use taskboard_core::validate::{Email, LongText, Name, Password, Slug};
use taskboard_core::{Error, Perform, Result};

use crate::cli::{MemberCmd, ProjectCmd};
use crate::output::Out;

use super::helpers::{agent_config, page, patch, read_secret, valid};

pub(super) async fn member<B: Perform>(b: &B, c: MemberCmd, out: Out) -> Result<()> {
    match c {
        MemberCmd::List { all, page: p } => out.list(
            &b.call::<ListMembers>(
                (),
                MemberListQuery { include_inactive: all, page: page(p), ..Default::default() },
                (),
            )
            .await?,
        ),
        MemberCmd::Show { member } => out.item(&b.find_member(&member).await?),
        MemberCmd::Create { name, slug, kind, role, password_generate, config } => {
            if password_generate && kind != taskboard_core::model::MemberType::Human {
                return Err(Error::invalid(
                    "password_generate",
                    "only a person (--type human) has a password",
                ));
            }
            let new = NewMember {
                name: valid("name", Name::new(name))?,
                slug: valid("slug", Slug::new(slug))?,
                kind,
                role,
                agent_config: agent_config(config)?,
            };
            let created = b.call::<CreateMember>((), (), new).await?;
            let password = if password_generate {
                let password = taskboard_core::credentials::new_password();
                let request = NewPassword { password: valid("password", Password::new(password.clone()))? };
                b.call::<SetPassword>(created.id, (), request).await?;
                Some(password)
            } else {
                None
            };
            out.created_member(&created, password.as_deref());
        }
        MemberCmd::Update {
            member,
            name,
            slug,
            role,
            status,
            kind,
            avatar_url,
            clear_avatar,
            email,
            clear_email,
            agent_config,
        } => {
            let id = b.find_member(&member).await?.id;
            let patch = MemberPatch {
                name: patch(name.map(Name::new).transpose().map_err(|e| e.at("name"))?, false),
                slug: patch(slug.map(Slug::new).transpose().map_err(|e| e.at("slug"))?, false),
                role: patch(role, false),
                status: patch(status, false),
                kind: patch(kind, false),
                avatar_url: patch(avatar_url, clear_avatar),
                email: patch(email.map(Email::new).transpose().map_err(|e| e.at("email"))?, clear_email),
                agent_config: patch(
                    agent_config
                        .map(|j| serde_json::from_str(&j).map_err(|e| Error::invalid("agent_config", e)))
                        .transpose()?,
                    false,
                ),
            };
            out.item(&b.call::<UpdateMember>(id, (), patch).await?)
        }
        MemberCmd::Delete { member } => {
            let m = b.find_member(&member).await?;
            out.done(&b.call::<DeleteMember>(m.id, (), ()).await?, &format!("deleted member {}", m.slug))
        }
        MemberCmd::RegenerateToken { member } => {
            let m = b.find_member(&member).await?;
            let t = b.call::<RegenerateToken>(m.id, (), ()).await?;
            if out.quiet {
                out.line(&t.token);
            } else {
                out.done(&t, &format!("new token of {} (shown once): {}", m.slug, t.token));
            }
        }
        MemberCmd::RevokeToken { member } => {
            let m = b.find_member(&member).await?;
            out.done(&b.call::<RevokeToken>(m.id, (), ()).await?, &format!("revoked the token of {}", m.slug))
        }
        MemberCmd::SetPassword { member, password, generate } => {
            let m = b.find_member(&member).await?;
            let password = match password {
                Some(p) => p,
                None if generate => taskboard_core::credentials::new_password(),
                None => read_secret("new password")?,
            };
            let request = NewPassword { password: valid("password", Password::new(password.clone()))? };
            let done = b.call::<SetPassword>(m.id, (), request).await?;
            if !generate {
                out.done(&done, &format!("password of {} set", m.slug));
            } else if out.json {
                out.done(&serde_json::json!({ "password": password }), "");
            } else if out.quiet {
                out.line(&password);
            } else {
                out.line(&format!("password of {} (shown once): {password}", m.slug));
            }
        }
        MemberCmd::LogoutEverywhere { member } => {
            let m = b.find_member(&member).await?;
            let done = b.call::<LogoutEverywhere>(m.id, (), ()).await?;
            out.done(&done, &format!("every login of {} ended", m.slug))
        }
        MemberCmd::Status { status } => {
            let s = b.call::<SetMyStatus>((), StatusQuery { status }, ()).await?;
            out.done(&s, &format!("status: {}", s.status))
        }
    }
    Ok(())
}

pub(super) async fn project<B: Perform>(b: &B, c: ProjectCmd, out: Out) -> Result<()> {
    match c {
        ProjectCmd::List { all, page: p } => out.list(
            &b.call::<ListProjects>(
                (),
                ProjectListQuery { include_archived: all, page: page(p), ..Default::default() },
                (),
            )
            .await?,
        ),
        ProjectCmd::Show { project } => out.item(&b.find_project(&project).await?),
        ProjectCmd::Create { name, slug, description, repo_urls, auto_assign } => {
            let new = NewProject {
                name: valid("name", Name::new(name))?,
                slug: valid("slug", Slug::new(slug))?,
                description: description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                repo_urls,
                auto_assign,
            };
            out.item(&b.call::<CreateProject>((), (), new).await?)
        }
        ProjectCmd::Update {
            project,
            name,
            slug,
            description,
            clear_description,
            repo_urls,
            clear_repos,
            status,
            auto_assign,
            landing,
        } => {
            let id = b.find_project(&project).await?.id;
            let repos = if clear_repos {
                Patch::Value(Vec::new())
            } else {
                patch((!repo_urls.is_empty()).then_some(repo_urls), false)
            };
            let patch = ProjectPatch {
                name: patch(name.map(Name::new).transpose().map_err(|e| e.at("name"))?, false),
                slug: patch(slug.map(Slug::new).transpose().map_err(|e| e.at("slug"))?, false),
                description: patch(
                    description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                    clear_description,
                ),
                repo_urls: repos,
                status: patch(status, false),
                auto_assign: patch(auto_assign, false),
                ..landing_patch(landing)
            };
            out.item(&b.call::<UpdateProject>(id, (), patch).await?)
        }
        ProjectCmd::Delete { project } => {
            let p = b.find_project(&project).await?;
            out.done(&b.call::<DeleteProject>(p.id, (), ()).await?, &format!("deleted project {}", p.slug))
        }
        ProjectCmd::Members { project } => {
            let p = b.find_project(&project).await?;
            out.list(&b.call::<ListProjectMembers>(p.id, Page::default(), ()).await?)
        }
        ProjectCmd::AddMember { project, member } => {
            let p = b.find_project(&project).await?;
            let m = b.find_member(&member).await?;
            out.done(
                &b.call::<AddProjectMember>(p.id, (), NewProjectMember { member_id: m.id }).await?,
                &format!("added {} to {}", m.slug, p.slug),
            )
        }
        ProjectCmd::RemoveMember { project, member } => {
            let p = b.find_project(&project).await?;
            let m = b.find_member(&member).await?;
            out.done(
                &b.call::<RemoveProjectMember>((p.id, m.id), (), ()).await?,
                &format!("removed {} from {}", m.slug, p.slug),
            )
        }
    }
    Ok(())
}

/// The landing settings a `project update` names; an empty text clears one.
fn landing_patch(l: crate::cli::LandingArgs) -> ProjectPatch {
    let text = |v: Option<String>| match v {
        None => Patch::Absent,
        Some(t) if t.is_empty() => Patch::Null,
        Some(t) => Patch::Value(t),
    };
    ProjectPatch {
        base_branch: text(l.base_branch),
        check_command: text(l.check_command),
        on_conflict: l.on_conflict.map_or(Patch::Absent, Patch::Value),
        reviewers: match l.reviewers {
            None => Patch::Absent,
            Some(r) => Patch::Value(r.into_iter().filter(|s| !s.is_empty()).collect()),
        },
        required_approvals: l.required_approvals.map_or(Patch::Absent, Patch::Value),
        max_rounds: l.max_rounds.map_or(Patch::Absent, Patch::Value),
        ..ProjectPatch::default()
    }
}
