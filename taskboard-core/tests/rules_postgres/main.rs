//! The rule tests of `tests/rules`, with every board that is not
//! explicitly on disk kept in PostgreSQL (see `support::on_postgres`).

#[path = "../rules/auth.rs"]
mod auth;
#[path = "../rules/backup.rs"]
mod backup;
#[path = "../rules/concurrency.rs"]
mod concurrency;
#[path = "../rules/conditions.rs"]
mod conditions;
#[path = "../rules/cursors.rs"]
mod cursors;
#[path = "../rules/events.rs"]
mod events;
#[path = "../rules/files.rs"]
mod files;
#[path = "../rules/first_run.rs"]
mod first_run;
#[path = "../rules/idempotency.rs"]
mod idempotency;
#[path = "../rules/members.rs"]
mod members;
#[path = "../rules/messages.rs"]
mod messages;
#[path = "../rules/oidc.rs"]
mod oidc;
#[path = "../rules/paging.rs"]
mod paging;
#[path = "../rules/projects.rs"]
mod projects;
#[path = "../rules/retries.rs"]
mod retries;
#[path = "../rules/security.rs"]
mod security;
mod shared;
#[path = "../rules/support.rs"]
mod support;
#[path = "../rules/tasks.rs"]
mod tasks;
#[path = "../rules/tokens.rs"]
mod tokens;
#[path = "../rules/webhooks.rs"]
mod webhooks;
#[path = "../rules/work.rs"]
mod work;
