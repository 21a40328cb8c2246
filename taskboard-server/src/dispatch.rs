//! The one dispatch function: an endpoint name, its parsed inputs and the
//! acting member in; the board's answer out.

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use taskboard_core::api::*;
use taskboard_core::archive::BackupRequest;
use taskboard_core::model::{Health, Ok as OkBody, StatusResponse, TokenResponse};
use taskboard_core::validate::LongText;
use taskboard_core::{Actor, Error};

use crate::State;
use crate::files;
use crate::http::{Reject, ResBody, full, json};
use crate::parse::{self, parse_query};
use crate::router::{PathIds, Target};

/// Query of `GET /ws`: resume after this event.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct WsQuery {
    #[serde(default)]
    pub since: Option<u64>,
}

const OK: OkBody = OkBody::OK;

/// The credentials of a request: `Authorization: Bearer …`, else
/// `?token=…`.
fn credentials(req: &Request<Incoming>) -> Result<Option<std::borrow::Cow<'_, str>>, Error> {
    if let Some(value) = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let Some((scheme, token)) = value.trim().split_once(' ') else { return Ok(None) };
        return Ok(scheme.eq_ignore_ascii_case("bearer").then(|| std::borrow::Cow::Borrowed(token.trim())));
    }
    parse::query_token(req.uri().query())
}

async fn authenticate(state: &State, req: &Request<Incoming>) -> Result<Actor, Error> {
    match credentials(req)? {
        Some(token) if !token.is_empty() => state.board.authenticate(&token).await,
        _ => Err(Error::unauthorized("credentials are required: a bearer token or ?token=")),
    }
}

/// The JSON body of a request, as `T`.
async fn body<T: DeserializeOwned + schemars::JsonSchema + 'static>(
    state: &State,
    req: Request<Incoming>,
) -> Result<T, Reject> {
    parse::check_json_type(req.headers())?;
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let bytes = parse::read_body(req.into_body(), declared, &state.limits).await?;
    Ok(parse::json(&bytes)?)
}

/// Applies [ext] paging to a list the core returns whole.
fn paged<T>(page: Page, items: Vec<T>) -> Result<Vec<T>, Error> {
    page.check()?;
    Ok(page.apply(items))
}

pub(crate) async fn dispatch(
    state: &State,
    target: Target,
    ids: PathIds,
    req: Request<Incoming>,
) -> Result<Response<ResBody>, Reject> {
    let name = match target {
        Target::Api(name) => name,
        Target::Docs => {
            return Ok(full(
                StatusCode::OK,
                HeaderValue::from_static("text/html; charset=utf-8"),
                Bytes::from_static(crate::openapi::DOCS_PAGE.as_bytes()),
            ));
        }
        Target::OpenApi => {
            return Ok(full(
                StatusCode::OK,
                HeaderValue::from_static("application/json"),
                crate::openapi::document_bytes(),
            ));
        }
        Target::Panic => panic!("the test route panics"),
    };
    let endpoint = name.endpoint();
    let status = StatusCode::from_u16(endpoint.status).unwrap_or(StatusCode::OK);
    let board = &state.board;

    // The endpoints without credentials.
    match name {
        EndpointName::health => {
            let health = Health { status: "ok".into(), version: env!("CARGO_PKG_VERSION").into() };
            return Ok(json(status, &health));
        }
        EndpointName::login => {
            let login: LoginRequest = body(state, req).await?;
            return Ok(json(status, &board.login(&login.login, &login.password).await?));
        }
        _ => {}
    }

    let actor = authenticate(state, &req).await?;
    let a = &actor;
    let query = req.uri().query();
    let res = match name {
        EndpointName::health | EndpointName::login => unreachable!("answered above"),

        // ---- members ----
        EndpointName::list_members => {
            let q = parse_query!(MemberListQuery, query)?;
            json(status, &board.list_members(a, q.include_inactive, q.page).await?)
        }
        EndpointName::create_member => {
            let new: NewMember = body(state, req).await?;
            json(status, &board.create_member(a, new).await?)
        }
        EndpointName::get_me => json(status, &board.me(a).await?),
        EndpointName::set_my_status => {
            let q = parse_query!(StatusQuery, query)?;
            json(status, &StatusResponse { status: board.set_status(a, q.status).await? })
        }
        EndpointName::get_member => json(status, &board.get_member(a, ids.first()).await?),
        EndpointName::update_member => {
            let patch: MemberPatch = body(state, req).await?;
            json(status, &board.update_member(a, ids.first(), patch).await?)
        }
        EndpointName::delete_member => {
            board.delete_member(a, ids.first()).await?;
            json(status, &OK)
        }
        EndpointName::regenerate_token => {
            json(status, &TokenResponse { token: board.regenerate_token(a, ids.first()).await? })
        }
        EndpointName::revoke_token => {
            board.revoke_token(a, ids.first()).await?;
            json(status, &OK)
        }
        EndpointName::set_password => {
            let new: SetPassword = body(state, req).await?;
            board.set_password(a, ids.first(), new.password).await?;
            json(status, &OK)
        }

        // ---- projects ----
        EndpointName::list_projects => {
            let q = parse_query!(ProjectListQuery, query)?;
            json(status, &board.list_projects(a, q.include_archived, q.page).await?)
        }
        EndpointName::create_project => {
            let new: NewProject = body(state, req).await?;
            json(status, &board.create_project(a, new).await?)
        }
        EndpointName::get_project => json(status, &board.get_project(a, ids.first()).await?),
        EndpointName::update_project => {
            let patch: ProjectPatch = body(state, req).await?;
            json(status, &board.update_project(a, ids.first(), patch).await?)
        }
        EndpointName::delete_project => {
            board.delete_project(a, ids.first()).await?;
            json(status, &OK)
        }
        EndpointName::list_project_members => {
            let page = parse_query!(Page, query)?;
            json(status, &paged(page, board.project_members(a, ids.first()).await?)?)
        }
        EndpointName::add_project_member => {
            let add: AddProjectMember = body(state, req).await?;
            board.add_project_member(a, ids.first(), add.member_id).await?;
            json(status, &OK)
        }
        EndpointName::remove_project_member => {
            board.remove_project_member(a, ids.first(), ids.second()).await?;
            json(status, &OK)
        }

        // ---- project files ----
        EndpointName::list_files => {
            let q = parse_query!(FileListQuery, query)?;
            json(status, &board.list_files(a, ids.first(), q.search, q.page).await?)
        }
        EndpointName::upload_file => {
            let project = ids.first();
            let (headers, incoming) = split(req);
            let (file, texts) = files::multipart(
                &headers,
                incoming,
                state.limits.body_read_timeout,
                |part, before| async move {
                    let description = description_of(&before);
                    board
                        .upload_file(
                            a,
                            project,
                            &part.filename,
                            description,
                            part.mime_type.as_deref(),
                            part.content,
                        )
                        .await
                },
            )
            .await?;
            // A description sent after the file could not be known while
            // the file streamed in; it is applied now.
            let file = match description_of(&texts) {
                Some(d) if file.description.as_deref() != Some(d.as_str()) => {
                    let description = LongText::new(d).map_err(|e| e.at("description"))?;
                    let patch = FilePatch { description: Patch::Value(description) };
                    board.update_file(a, project, file.id, patch).await?
                }
                _ => file,
            };
            json(status, &file)
        }
        EndpointName::get_file => json(status, &board.get_file(a, ids.first(), ids.second()).await?),
        EndpointName::update_file => {
            let patch: FilePatch = body(state, req).await?;
            json(status, &board.update_file(a, ids.first(), ids.second(), patch).await?)
        }
        EndpointName::delete_file => {
            board.delete_file(a, ids.first(), ids.second()).await?;
            json(status, &OK)
        }
        EndpointName::download_file => files::download(board.open_file(a, ids.first(), ids.second()).await?),

        // ---- tasks ----
        EndpointName::list_tasks => {
            let filter = parse_query!(TaskFilter, query)?;
            json(status, &board.list_tasks(a, filter).await?)
        }
        EndpointName::create_task => {
            let q = parse_query!(ProjectIdQuery, query)?;
            let new: NewTask = body(state, req).await?;
            json(status, &board.create_task(a, q.project_id, new).await?)
        }
        EndpointName::get_task => {
            let body = board.get_task_json(a, ids.first()).await?;
            crate::http::full(status, crate::http::JSON, Bytes::from_owner(ArcStr(body)))
        }
        EndpointName::update_task => {
            let patch: TaskPatch = body(state, req).await?;
            json(status, &board.update_task(a, ids.first(), patch).await?)
        }
        EndpointName::delete_task => {
            board.delete_task(a, ids.first()).await?;
            json(status, &OK)
        }
        EndpointName::take_task => json(status, &board.take(a, ids.first()).await?),
        EndpointName::reject_task => {
            let r: RejectRequest = body(state, req).await?;
            json(status, &board.reject(a, ids.first(), r.reason).await?)
        }
        EndpointName::assign_task => {
            let r: AssignRequest = body(state, req).await?;
            json(status, &board.assign(a, ids.first(), r.assignee_id).await?)
        }
        EndpointName::watch_task => json(status, &board.watch(a, ids.first()).await?),
        EndpointName::unwatch_task => json(status, &board.unwatch(a, ids.first()).await?),
        EndpointName::list_links => {
            let page = parse_query!(Page, query)?;
            json(status, &paged(page, board.list_links(a, ids.first()).await?)?)
        }
        EndpointName::create_link => {
            let new: NewLink = body(state, req).await?;
            json(status, &board.create_link(a, ids.first(), new).await?)
        }
        EndpointName::delete_link => {
            board.delete_link(a, ids.first(), ids.second()).await?;
            json(status, &OK)
        }
        EndpointName::add_task_label => {
            board.add_task_label(a, ids.first(), ids.second()).await?;
            json(status, &OK)
        }
        EndpointName::remove_task_label => {
            board.remove_task_label(a, ids.first(), ids.second()).await?;
            json(status, &OK)
        }
        EndpointName::list_actions => {
            let page = parse_query!(Page, query)?;
            json(status, &paged(page, board.task_actions(a, ids.first()).await?)?)
        }

        // ---- steps ----
        EndpointName::list_steps => {
            let page = parse_query!(Page, query)?;
            json(status, &paged(page, board.list_steps(a, ids.first()).await?)?)
        }
        EndpointName::create_step => {
            let new: NewStep = body(state, req).await?;
            json(status, &board.create_step(a, ids.first(), new.title).await?)
        }
        EndpointName::update_step => {
            let patch: StepPatch = body(state, req).await?;
            json(status, &board.update_step(a, ids.first(), ids.second(), patch).await?)
        }
        EndpointName::delete_step => {
            board.delete_step(a, ids.first(), ids.second()).await?;
            json(status, &OK)
        }

        // ---- messages and attachments ----
        EndpointName::list_messages => {
            let filter = parse_query!(MessageFilter, query)?;
            json(status, &board.list_messages(a, filter).await?)
        }
        EndpointName::post_message => {
            let new: NewMessage = body(state, req).await?;
            json(status, &board.post_message(a, new).await?)
        }
        EndpointName::list_replies => {
            let page = parse_query!(Page, query)?;
            json(status, &paged(page, board.replies(a, ids.first()).await?)?)
        }
        EndpointName::upload => {
            let (headers, incoming) = split(req);
            let (uploaded, _) =
                files::multipart(&headers, incoming, state.limits.body_read_timeout, |part, _| async move {
                    board.upload(a, &part.filename, part.mime_type.as_deref(), part.content).await
                })
                .await?;
            json(status, &uploaded)
        }
        EndpointName::download_attachment => files::download(board.open_attachment(a, ids.first()).await?),

        // ---- labels ----
        EndpointName::list_labels => {
            let page = parse_query!(Page, query)?;
            json(status, &board.list_labels(a, page).await?)
        }
        EndpointName::create_label => {
            let new: NewLabel = body(state, req).await?;
            json(status, &board.create_label(a, new).await?)
        }
        EndpointName::update_label => {
            let patch: LabelPatch = body(state, req).await?;
            json(status, &board.update_label(a, ids.first(), patch).await?)
        }
        EndpointName::delete_label => {
            board.delete_label(a, ids.first()).await?;
            json(status, &OK)
        }

        // ---- administration and events ----
        EndpointName::backup => {
            let r: BackupRequest = body(state, req).await?;
            json(status, &board.backup_archive(a, r.path.into()).await?)
        }
        EndpointName::websocket => {
            let q = parse_query!(WsQuery, query)?;
            let mut req = req;
            crate::ws::upgrade(&state.ws, actor, q.since, &mut req)?.map(http_body_util::Either::Left)
        }
    };
    Ok(res)
}

fn split(req: Request<Incoming>) -> (hyper::HeaderMap, Incoming) {
    let (parts, body) = req.into_parts();
    (parts.headers, body)
}

fn description_of(texts: &[(String, String)]) -> Option<String> {
    texts.iter().rev().find(|(name, _)| name == "description").map(|(_, v)| v.clone())
}

/// JSON the board keeps rendered, sent without a copy.
struct ArcStr(std::sync::Arc<str>);

impl AsRef<[u8]> for ArcStr {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}
