//! The process's TLS provider: rustls on ring, the one provider of the
//! workspace (docs/decisions.md, crates). reqwest is built without a
//! provider of its own (`rustls-no-provider`), so ring is installed as
//! the process's default before any HTTP client is made: by the server,
//! the command line and the runner, and by the tests and load programs.

/// Installs ring as the process's rustls provider, once; a provider
/// installed before (by the embedding program) is left as it is.
pub fn install_provider() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
