//! The workspace hack: one dependency every member takes, naming each
//! third-party crate with the union of the features the workspace asks of
//! it, so that `cargo build -p taskboard-server`, `cargo test --workspace`
//! and the bench scripts compile one set of artifacts. Its manifest is
//! written by `cargo hakari generate` (.config/hakari.toml, and
//! docs/decisions.md H.8).
