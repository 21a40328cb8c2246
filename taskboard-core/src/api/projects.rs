//! Projects, their members and their files.

use super::endpoint::{Call, Caller, Download};
use super::endpoint::{Handle, ListHandler};
use crate::board::{Board, List, Resource};
use crate::error::Result;
use crate::model::{Ok, Project, ProjectFile, ProjectMember};
use crate::wire::ProjectListQuery;
use crate::wire::api::{
    AddProjectMember, CreateProject, DeleteFile, DeleteProject, DownloadFile, GetFile, GetProject, ListFiles,
    ListProjectMembers, ListProjects, RemoveProjectMember, UpdateFile, UpdateProject, UploadFile,
};

impl ListHandler for ListProjects {
    fn list(board: &Board, _: &Caller, _: Self::Path, query: Self::Query) -> Result<List<Project>> {
        let ProjectListQuery { include_archived, slug, page } = query;
        Ok(match slug {
            Some(slug) => board.projects_by_slug(&slug, include_archived, page),
            None => board.list_projects(include_archived, page),
        })
    }
}

impl Handle for CreateProject {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Project> {
        board.create_project(caller.actor()?, call.body).await
    }
}

impl Handle for GetProject {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Project> {
        board.get_project(call.path).await
    }
}

impl Handle for UpdateProject {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Project(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Project> {
        board.update_project(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DeleteProject {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Project(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_project(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}

impl ListHandler for ListProjectMembers {
    fn list(board: &Board, _: &Caller, id: Self::Path, query: Self::Query) -> Result<List<ProjectMember>> {
        Ok(board.project_members(id, query))
    }
}

impl Handle for AddProjectMember {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.add_project_member(caller.actor()?, call.path, call.body.member_id).await?;
        Ok(Ok::OK)
    }
}

impl Handle for RemoveProjectMember {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        let (project, member) = call.path;
        board.remove_project_member(caller.actor()?, project, member).await?;
        Ok(Ok::OK)
    }
}

impl ListHandler for ListFiles {
    fn list(board: &Board, _: &Caller, id: Self::Path, query: Self::Query) -> Result<List<ProjectFile>> {
        Ok(board.list_files(id, query.search, query.page))
    }
}

impl Handle for UploadFile {
    /// A `description` may come before or after the file; one after it
    /// is known once the content has been read, before the file is
    /// recorded, so the file and its description are one change.
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<ProjectFile> {
        let mut upload = call.body;
        let content = std::mem::replace(&mut upload.content, Box::pin(tokio::io::empty()));
        let (filename, mime_type) = (upload.filename.clone(), upload.mime_type.clone());
        let description = move || upload.field("description");
        board
            .upload_file_described(
                caller.actor()?,
                call.path,
                &filename,
                description,
                mime_type.as_deref(),
                content,
            )
            .await
    }
}

impl Handle for GetFile {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<ProjectFile> {
        board.get_file(call.path.0, call.path.1).await
    }
}

impl Handle for UpdateFile {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::ProjectFile(path.0, path.1))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<ProjectFile> {
        board.update_file(caller.actor()?, call.path.0, call.path.1, call.body).await
    }
}

impl Handle for DeleteFile {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::ProjectFile(path.0, path.1))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_file(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}

impl Handle for DownloadFile {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Download> {
        board.open_file(call.path.0, call.path.1).await
    }
}
