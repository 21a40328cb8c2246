//! How a board is opened: [`BoardOptions`] and their defaults.

use std::time::Duration;

use super::{Clock, LoginLimits};

/// Default limit of an uploaded file: 50 MB (docs/rules.md, messages and files).
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 50 * 1000 * 1000;

/// How a board is opened.
#[derive(Debug, Clone)]
pub struct BoardOptions {
    /// Largest accepted upload, for attachments and project files.
    pub max_upload_bytes: u64,
    /// JWT signing secret; generated and kept in the data directory when
    /// not given.
    pub jwt_secret: Option<String>,
    /// How far a live subscriber may fall behind before it is cut off.
    pub event_buffer: usize,
    /// Bytes of the newest events kept in memory; older retained events
    /// are read from the store when a subscriber needs them.
    pub event_memory: usize,
    /// Bytes of the database's page cache (pages read, and pages written
    /// but not yet on disk).
    pub store_cache: usize,
    /// Age after which uploads never bound to a message are reclaimed.
    pub unbound_upload_ttl: Duration,
    /// Throttling of failed logins.
    pub login_limits: LoginLimits,
    /// Password hashes computed at once (logins, password changes); the
    /// default leaves half the processors to everything else.
    pub password_hashers: usize,
    /// The time source of login throttling; tests use a manual one.
    pub clock: Clock,
    /// Which targets webhooks may have, and how deliveries are retried.
    pub webhooks: crate::webhooks::WebhookOptions,
    /// Bytes a run's transcript keeps before it drops entries.
    pub transcript_cap: u64,
    /// How long a login (a JWT from `POST /auth/login`) lasts.
    pub session_lifetime: Duration,
    /// Single sign-on with OpenID Connect, when configured.
    pub oidc: Option<crate::oidc::OidcOptions>,
    /// Who may log in with a password.
    pub password_login: crate::oidc::PasswordLogin,
}

impl Default for BoardOptions {
    fn default() -> BoardOptions {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        BoardOptions {
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
            jwt_secret: None,
            event_buffer: 4096,
            event_memory: 16 * 1024 * 1024,
            store_cache: crate::storage::redb::DEFAULT_CACHE_BYTES,
            unbound_upload_ttl: Duration::from_secs(24 * 3600),
            login_limits: LoginLimits::default(),
            password_hashers: (cpus / 2).max(1),
            clock: Clock::system(),
            webhooks: Default::default(),
            transcript_cap: crate::runs::DEFAULT_TRANSCRIPT_CAP,
            session_lifetime: Duration::from_secs(crate::credentials::JWT_LIFETIME_SECS as u64),
            oidc: None,
            password_login: Default::default(),
        }
    }
}
