//! The stored login: server address and token, kept in the user's config
//! directory with mode 0600 so other users of the machine cannot read it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use taskboard_core::{Error, Perform, Result};
use uuid::Uuid;

/// Overrides the credentials file's path (tests, several accounts).
pub const CREDENTIALS_ENV: &str = "TASKBOARD_CREDENTIALS";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredLogin {
    pub server: String,
    pub token: String,
    pub member_id: Uuid,
    pub slug: String,
}

/// `$TASKBOARD_CREDENTIALS`, else `$XDG_CONFIG_HOME/taskboard/credentials.json`,
/// else `~/.config/taskboard/credentials.json`.
pub fn credentials_path() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = nonempty(CREDENTIALS_ENV) {
        return Some(p);
    }
    let config = nonempty("XDG_CONFIG_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".config")))?;
    Some(config.join("taskboard").join("credentials.json"))
}

fn no_home() -> Error {
    Error::bad_request(format!(
        "cannot find a config directory: set HOME, XDG_CONFIG_HOME or {CREDENTIALS_ENV}"
    ))
}

/// The stored login, if any. A damaged file is reported, not ignored.
pub fn load() -> Result<Option<StoredLogin>> {
    let Some(path) = credentials_path() else { return Ok(None) };
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::bad_request(format!("{}: {e}; run `taskboard logout`", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::bad_request(format!("{}: {e}", path.display()))),
    }
}

pub fn store(login: &StoredLogin) -> Result<PathBuf> {
    let path = credentials_path().ok_or_else(no_home)?;
    let io = |e: std::io::Error| Error::bad_request(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // `mode` applies only when the file is created; tighten an old one.
        if path.exists() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        }
    }
    let mut file = options.open(&path).map_err(io)?;
    let json = serde_json::to_vec_pretty(login).map_err(|e| Error::bad_request(e.to_string()))?;
    std::io::Write::write_all(&mut file, &json).map_err(io)?;
    Ok(path)
}

/// Removes the stored login; true when there was one.
pub fn remove() -> Result<bool> {
    let Some(path) = credentials_path() else { return Ok(false) };
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::bad_request(format!("{}: {e}", path.display()))),
    }
}

/// How long `login --sso` waits for the browser to come back.
const SSO_WAIT: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// `login --sso`: single sign-on through the browser. Listens on
/// 127.0.0.1 port 0, prints the server's address that starts a sign-in
/// returning there (and opens it with `$BROWSER` when that is set), waits
/// for the browser to come back with its login code and exchanges it for
/// a login. The browser itself starts the sign-in, as the board binds a
/// sign-in to the browser that started it (docs/decisions.md 20.r).
pub async fn sso(client: &crate::client::Client) -> Result<taskboard_core::wire::LoginResponse> {
    use taskboard_core::api::{ExchangeLoginCode, GetAuthMethods, LoginCodeRequest};
    let methods = client.call::<GetAuthMethods>((), (), ()).await?;
    let sso =
        methods.sso.ok_or_else(|| Error::not_found("single sign-on is not configured on this server"))?;
    let io =
        |e: std::io::Error| Error::bad_request(format!("cannot listen on 127.0.0.1 for the sign-in: {e}"));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(io)?;
    let port = listener.local_addr().map_err(io)?.port();
    let return_to: String =
        form_urlencoded::byte_serialize(format!("http://127.0.0.1:{port}/").as_bytes()).collect();
    let start = format!("{}{}?return_to={return_to}", client.base_url(), sso.start);
    eprintln!("Open this address in a browser to sign in with {}:\n  {start}", sso.name);
    open_browser(&start);
    let code = tokio::time::timeout(SSO_WAIT, receive_login_code(&listener))
        .await
        .map_err(|_| Error::bad_request("no sign-in came back within 10 minutes"))??;
    client.call::<ExchangeLoginCode>((), (), LoginCodeRequest { login_code: code }).await
}

/// Runs `$BROWSER URL` when `$BROWSER` is set; a browser that cannot be
/// started leaves the printed address to open by hand.
fn open_browser(url: &str) {
    let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) else { return };
    match std::process::Command::new(&browser)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        // Not waited for: a browser may run long after the sign-in.
        Ok(child) => drop(child),
        Err(e) => eprintln!("(could not start {}: {e})", browser.to_string_lossy()),
    }
}

/// Answers the requests of the browser until one brings `login_code`.
async fn receive_login_code(listener: &tokio::net::TcpListener) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head);
        let target = text.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or("");
        let query = target.split_once('?').map_or("", |(_, q)| q);
        let code = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "login_code").map(|(_, v)| v);
        let (status, body) = match &code {
            Some(_) => {
                ("200 OK", "Signed in to Taskboard. You can close this tab and go back to the terminal.")
            }
            None => ("404 Not Found", "Waiting for the sign-in to come back here."),
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
             cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
        if let Some(code) = code {
            return Ok(code.into_owned());
        }
    }
}
