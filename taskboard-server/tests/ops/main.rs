//! The server as an operator runs it: the real binary in its own process,
//! configured by flags, environment and a configuration file, logging,
//! backing up and serving TLS.

mod config_file;
mod logs;
mod sso;
mod support;
mod tls;
