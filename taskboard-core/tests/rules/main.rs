//! Every rule of REST-INTERFACE.md and DECISIONS.md, tested against real
//! redb databases (in memory, or a file when storage is what is tested).
//! One test binary; one module per section of the specification.

mod support;

mod auth;
mod backup;
mod concurrency;
mod conditions;
mod cursors;
mod events;
mod fencing;
mod files;
mod first_run;
mod idempotency;
mod members;
mod message_runs;
mod messages;
mod oidc;
mod paging;
mod projects;
mod reads;
mod retries;
mod review;
mod runs;
mod schema;
mod security;
mod tasks;
mod tokens;
mod webhooks;
mod work;
