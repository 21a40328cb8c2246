//! End-to-end tests of the `taskboard` binary, in one test binary.

mod admin;
mod first_use;
mod modes;
mod postgres;
mod remote;
mod runs;
mod webhooks;
mod work;
