//! The API: one declaration and one handler per endpoint.
//!
//! Each endpoint is a type implementing [`Endpoint`] (its route, its typed
//! path, query and body, its answer) and [`Handle`] (the core function
//! that performs it). The server's routes and dispatch, the typed HTTP client, the
//! command line's local and remote modes and the OpenAPI document are
//! derived from these declarations, so an embedding program calling
//! [`call`], the command line and a server user get the same answers:
//!
//! ```
//! use taskboard_core::api::{self, Caller, CreateLabel, ListLabels, NewLabel, Page};
//! use taskboard_core::validate::{LabelName, Slug};
//! use taskboard_core::{Board, BoardOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let board = Board::open_in_memory(BoardOptions::default()).await?;
//! let boot = board.bootstrap_owner(Slug::new("owner")?, None).await?.expect("a new board");
//! let caller = Caller::member(board.actor(boot.owner.id).await?);
//! let new = NewLabel { name: LabelName::new("bug")?, color: Default::default() };
//! api::call::<CreateLabel>(&board, &caller, (), (), new).await?;
//! let page = Page { limit: Some(10), ..Page::default() };
//! assert_eq!(api::call::<ListLabels>(&board, &caller, (), page, ()).await?.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! The declarations (route, inputs, answer, scope) are the wire's
//! (`taskboard_wire::api`), so a client builds without the board; the
//! core function of each is its [`Handle`] here. A declaration without its
//! handler does not compile: [`BoardCaller`](crate::BoardCaller) performs
//! every endpoint of the one list (`taskboard_wire::every_endpoint!`),
//! which [`Perform`](crate::Perform) requires.

mod admin;
mod calls;
pub mod endpoint;
mod events;
mod imports;
mod members;
mod messages;
mod oidc;
mod projects;
mod reviews;
mod runs;
mod scopes;
mod steps;
mod tasks;
mod tokens;
mod webhooks;
mod work;

pub use crate::wire::endpoint::infos;
pub use calls::{call, call_idempotent, perform};
pub use endpoint::{
    BodyKind, Call, Caller, Endpoint, Handle, Info, ListEndpoint, ListHandler, Method, Optional, PathParams,
    QueryParams, RawBody, RequestBody, Visitor, decode_body, visit_all,
};
pub use scopes::permit;

pub use crate::wire::*;
pub use crate::wire::{fields, json, paged};

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    #[test]
    fn names_and_routes_are_unique() {
        let infos = super::infos();
        let names: HashSet<_> = infos.iter().map(|i| i.name).collect();
        assert_eq!(names.len(), infos.len());
        let routes: HashSet<_> = infos.iter().map(|i| (i.method, i.path)).collect();
        assert_eq!(routes.len(), infos.len());
    }

    /// A declaration left out of the list of endpoints would have no
    /// route, no client call and no documentation: every `impl Endpoint`
    /// and `impl ListEndpoint` of the wire's `api` directory is visited,
    /// and every endpoint visited has its handler in this directory.
    #[test]
    fn every_declared_endpoint_is_visited_and_handled() {
        struct Names(HashSet<String>);
        impl super::Visitor for Names {
            fn visit<E: super::Handle>(&mut self) {
                let full = std::any::type_name::<E>();
                self.0.insert(full.rsplit("::").next().unwrap_or(full).to_string());
            }
        }
        let mut visited = Names(HashSet::new());
        super::visit_all(&mut visited);
        let impls = |dir: &str, traits: &[&str]| {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            let mut found = HashSet::new();
            for entry in std::fs::read_dir(dir).unwrap() {
                let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
                for line in text.lines() {
                    for t in traits {
                        if let Some(rest) = line.strip_prefix(&format!("impl {t} for ")) {
                            found.insert(rest.trim_end_matches(" {").trim().to_string());
                        }
                    }
                }
            }
            found
        };
        let declared = impls("../taskboard-wire/src/api", &["Endpoint", "ListEndpoint"]);
        assert!(declared.len() > 80, "the declarations were not found: {declared:?}");
        let missing: Vec<_> = declared.difference(&visited.0).collect();
        assert!(missing.is_empty(), "declared but not in every_endpoint!: {missing:?}");
        assert_eq!(declared, visited.0);
        assert_eq!(impls("src/api", &["Handle", "ListHandler"]), declared);
    }
}
