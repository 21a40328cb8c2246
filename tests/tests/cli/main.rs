//! End-to-end tests of the `taskboard` binary, in one test binary.

mod admin;
mod backups;
mod claude_code;
mod first_day;
mod first_use;
mod imports;
mod modes;
mod postgres;
mod remote;
mod review_land;
mod reviews;
mod runner;
mod runner_acp;
mod runner_faults;
mod runner_local;
mod runner_mentions;
mod runner_security;
mod runs;
mod sso;
mod tokens;
mod webhooks;
mod work;
