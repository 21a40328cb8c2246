//! Projects, their members and their files.

use crate::endpoint::{Endpoint, Info, ListEndpoint, Method};
use crate::model::{Ok, Project, ProjectFile, ProjectMember};
use crate::{Download, Upload};
use crate::{FileListQuery, FilePatch, NewProject, NewProjectMember, Page, ProjectListQuery, ProjectPatch};
use uuid::Uuid;

/// `GET /projects`.
#[derive(Debug)]
pub struct ListProjects;

impl ListEndpoint for ListProjects {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "list_projects",
        method: Method::Get,
        path: "/api/v1/projects",
        auth: true,
        status: 200,
        summary: "List projects",
        description: "Active projects in creation order; `include_archived=true` adds archived ones. \
            `slug` keeps only the project with that slug (a list of none or one).",
        errors: &[],
    };
    type Path = ();
    type Query = ProjectListQuery;
    type Item = Project;
}

/// `POST /projects`.
#[derive(Debug)]
pub struct CreateProject;

impl Endpoint for CreateProject {
    const INFO: Info = Info {
        name: "create_project",
        method: Method::Post,
        path: "/api/v1/projects",
        auth: true,
        status: 201,
        summary: "Create a project with its main chat",
        description: "The creator becomes the project's owner member. A slug already taken is 409; task keys \
            are the slug in upper case and the task number (`WEB-12`). `repo_urls` only by an admin or owner \
            (403): runners fetch that code and run agents on it.",
        errors: &[403, 409],
    };
    type Path = ();
    type Query = ();
    type Body = NewProject;
    type Response = Project;
}

/// `GET /projects/{id}`.
#[derive(Debug)]
pub struct GetProject;

impl Endpoint for GetProject {
    const INFO: Info = Info {
        name: "get_project",
        method: Method::Get,
        path: "/api/v1/projects/{project_id}",
        auth: true,
        status: 200,
        summary: "Get a project",
        description: "Active or archived.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Project;
}

/// `PATCH /projects/{id}`.
#[derive(Debug)]
pub struct UpdateProject;

impl Endpoint for UpdateProject {
    const INFO: Info = Info {
        name: "update_project",
        method: Method::Patch,
        path: "/api/v1/projects/{project_id}",
        auth: true,
        status: 200,
        summary: "Update a project",
        description: "Name, slug, description, repository URLs, status (`active`, `archived`) and automatic \
            assignment. A new slug changes every task key of the project. Only an admin or owner changes \
            `repo_urls` (403).",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ProjectPatch;
    type Response = Project;
    const CONDITIONAL: bool = true;
}

/// `DELETE /projects/{id}`.
#[derive(Debug)]
pub struct DeleteProject;

impl Endpoint for DeleteProject {
    const INFO: Info = Info {
        name: "delete_project",
        method: Method::Delete,
        path: "/api/v1/projects/{project_id}",
        auth: true,
        status: 200,
        summary: "Delete a project and everything in it (owners only)",
        description: "Deletes the project with its tasks, steps, links, messages, chat and files, in one \
            transaction.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}

/// `GET /projects/{id}/members`.
#[derive(Debug)]
pub struct ListProjectMembers;

impl ListEndpoint for ListProjectMembers {
    const INFO: Info = Info {
        name: "list_project_members",
        method: Method::Get,
        path: "/api/v1/projects/{project_id}/members",
        auth: true,
        status: 200,
        summary: "List project members",
        description: "Each with its project role: `owner` for the creator, `member` for the others.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = Page;
    type Item = ProjectMember;
}

/// `POST /projects/{id}/members`.
#[derive(Debug)]
pub struct AddProjectMember;

impl Endpoint for AddProjectMember {
    const INFO: Info = Info {
        name: "add_project_member",
        method: Method::Post,
        path: "/api/v1/projects/{project_id}/members",
        auth: true,
        status: 200,
        summary: "Add a member to a project",
        description: "Admins and owners only. An unknown or inactive member is 404; one already in is 409.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewProjectMember;
    type Response = Ok;
}

/// `DELETE /projects/{id}/members/{member_id}`.
#[derive(Debug)]
pub struct RemoveProjectMember;

impl Endpoint for RemoveProjectMember {
    const INFO: Info = Info {
        name: "remove_project_member",
        method: Method::Delete,
        path: "/api/v1/projects/{project_id}/members/{member_id}",
        auth: true,
        status: 200,
        summary: "Remove a member from a project",
        description: "Admins and owners only. The project's owner member cannot be removed (400).",
        errors: &[400, 403, 404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;
}

/// `GET /projects/{id}/files`.
#[derive(Debug)]
pub struct ListFiles;

impl ListEndpoint for ListFiles {
    const INFO: Info = Info {
        name: "list_files",
        method: Method::Get,
        path: "/api/v1/projects/{project_id}/files",
        auth: true,
        status: 200,
        summary: "List project files",
        description: "By file name; `search` keeps the names that contain it, in any case.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = FileListQuery;
    type Item = ProjectFile;
}

/// `POST /projects/{id}/files` (multipart: `file`, optional `description`).
#[derive(Debug)]
pub struct UploadFile;

impl Endpoint for UploadFile {
    const SCOPE: crate::model::Scope = crate::model::Scope::FilesWrite;
    const INFO: Info = Info {
        name: "upload_file",
        method: Method::Post,
        path: "/api/v1/projects/{project_id}/files",
        auth: true,
        status: 201,
        summary: "Upload a project file",
        description: "Streams the `file` part to storage; over the upload limit is 413 and nothing is kept. \
            Uploading a name that exists replaces its content and keeps its id. A name that is blank, \
            longer than 255 bytes, `.` or `..`, or holds `/`, `\\`, control or invisible formatting \
            characters is 400.",
        errors: &[400, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = Upload;
    type Response = ProjectFile;
}

/// `GET /projects/{id}/files/{file_id}`.
#[derive(Debug)]
pub struct GetFile;

impl Endpoint for GetFile {
    const INFO: Info = Info {
        name: "get_file",
        method: Method::Get,
        path: "/api/v1/projects/{project_id}/files/{file_id}",
        auth: true,
        status: 200,
        summary: "Get a project file's record",
        description: "Its name, description, type, size and times; the content is at `…/download`.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = ProjectFile;
}

/// `PATCH /projects/{id}/files/{file_id}`.
#[derive(Debug)]
pub struct UpdateFile;

impl Endpoint for UpdateFile {
    const SCOPE: crate::model::Scope = crate::model::Scope::FilesWrite;
    const INFO: Info = Info {
        name: "update_file",
        method: Method::Patch,
        path: "/api/v1/projects/{project_id}/files/{file_id}",
        auth: true,
        status: 200,
        summary: "Update a project file's description",
        description: "Sets or (null) clears the description.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = FilePatch;
    type Response = ProjectFile;
    const CONDITIONAL: bool = true;
}

/// `DELETE /projects/{id}/files/{file_id}`.
#[derive(Debug)]
pub struct DeleteFile;

impl Endpoint for DeleteFile {
    const SCOPE: crate::model::Scope = crate::model::Scope::FilesWrite;
    const INFO: Info = Info {
        name: "delete_file",
        method: Method::Delete,
        path: "/api/v1/projects/{project_id}/files/{file_id}",
        auth: true,
        status: 200,
        summary: "Delete a project file",
        description: "Deletes the record and its content.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}

/// `GET /projects/{id}/files/{file_id}/download`.
#[derive(Debug)]
pub struct DownloadFile;

impl Endpoint for DownloadFile {
    const INFO: Info = Info {
        name: "download_file",
        method: Method::Get,
        path: "/api/v1/projects/{project_id}/files/{file_id}/download",
        auth: true,
        status: 200,
        summary: "Download a project file",
        description: "The content with its type and length, `nosniff`, and its name in \
            `Content-Disposition` (`inline` for images other than SVG, `attachment` otherwise). \
            Credentials may be given as `?token=` so a link works in a browser.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Download;
}
