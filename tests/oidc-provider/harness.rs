//! The test OpenID Connect provider (tests/oidc-provider/provider.mjs, on
//! the pinned `oidc-provider` package that setup.sh installs under the
//! target directory on first use), and a cookie-keeping HTTP client that
//! signs in on its login page the way a browser would. Included by path
//! by each test binary that signs in through it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use reqwest::Url;

/// The board's client at the test provider.
pub const CLIENT_ID: &str = "taskboard-board";
pub const CLIENT_SECRET: &str = "taskboard-board-secret";
/// The path the provider sends the browser back to.
pub const CALLBACK_PATH: &str = "/api/v1/auth/oidc/callback";

/// The workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace")
}

/// The provider script, installed once per test run with its pinned
/// packages. A machine that cannot install them fails the tests, saying
/// why.
fn script() -> &'static Path {
    static SCRIPT: OnceLock<PathBuf> = OnceLock::new();
    SCRIPT.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable's path");
        // <target>/<profile>/deps/<test binary>
        let target = exe.ancestors().nth(3).expect("the target directory");
        let out = Command::new("bash")
            .arg(root().join("tests/oidc-provider/setup.sh"))
            .arg(target)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "the test OpenID Connect provider could not be installed by tests/oidc-provider/setup.sh \
             (it needs node and npm, as tests/setup.sh installs, and the npm registry): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// A running test provider; stopped when dropped.
pub struct Provider {
    /// The issuer: `http://127.0.0.1:PORT`.
    pub issuer: String,
    child: Child,
    stderr: Arc<Mutex<String>>,
    http: reqwest::Client,
}

impl Provider {
    /// Starts the provider and waits for the line naming its address.
    pub async fn start() -> Provider {
        let script = script().to_path_buf();
        tokio::task::spawn_blocking(move || Provider::start_blocking(&script)).await.expect("the start")
    }

    fn start_blocking(script: &Path) -> Provider {
        // The node setup.sh chose, beside the script.
        let node = script.with_file_name("node");
        let mut child = Command::new(&node)
            .arg(script)
            .args(["--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{} runs (tests/oidc-provider/setup.sh links it): {e}", node.display())
            });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            kept.lock().unwrap().push_str(&text);
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(url) = line.strip_prefix("listening on ") {
                        break url.trim().to_string();
                    }
                }
                _ => {
                    let _ = child.wait();
                    panic!("the test provider ended before listening: {}", stderr.lock().unwrap());
                }
            }
        };
        // Drained, so its later lines never fill the pipe.
        std::thread::spawn(move || for _ in lines {});
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        Provider { issuer, child, stderr, http }
    }

    async fn admin(&self, path: &str) {
        let res =
            self.http.post(format!("{}{path}", self.issuer)).send().await.expect("the provider answers");
        assert!(res.status().is_success(), "{path}: {}", res.text().await.unwrap_or_default());
    }

    /// Signs with a new key from now on; the old one is no longer
    /// published.
    pub async fn rotate_key(&self) {
        self.admin("/__admin/rotate").await;
    }

    /// How the next ID tokens are made: `normal`, `stray-key`,
    /// `unknown-key`, `wrong-audience`, `expired`, `other-issuer`.
    pub async fn set_mode(&self, mode: &str) {
        self.admin(&format!("/__admin/mode?m={mode}")).await;
    }

    /// Its published signing keys.
    pub async fn jwks(&self) -> serde_json::Value {
        self.http.get(format!("{}/jwks", self.issuer)).send().await.unwrap().json().await.unwrap()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One answer on the way.
#[derive(Debug)]
pub struct Step {
    pub url: Url,
    pub status: u16,
    pub location: Option<Url>,
    pub body: String,
}

impl Step {
    /// The `login_code` of the address this answer redirects to.
    #[track_caller]
    pub fn login_code(&self) -> String {
        let location = self.location.as_ref().unwrap_or_else(|| {
            panic!("{} answered {} without a redirect: {}", self.url, self.status, self.body)
        });
        location
            .query_pairs()
            .find(|(k, _)| k == "login_code")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| panic!("no login_code in {location}"))
    }

    /// The JSON error of the answer.
    pub fn error(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }
}

/// A cookie-keeping client following redirects one by one, as a browser
/// does, so a test can stop at any of them.
pub struct Browser {
    http: reqwest::Client,
    /// name → (path, value); every test service is on 127.0.0.1.
    cookies: Mutex<Vec<(String, String, String)>>,
}

impl Default for Browser {
    fn default() -> Browser {
        Browser::new()
    }
}

impl Browser {
    pub fn new() -> Browser {
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Browser { http, cookies: Mutex::new(Vec::new()) }
    }

    /// One request, with the cookies its path gets, keeping those set.
    pub async fn send(&self, url: Url, form: Option<Vec<(String, String)>>) -> Step {
        let cookie: Vec<String> = self
            .cookies
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, path, _)| url.path().starts_with(path.as_str()))
            .map(|(name, _, value)| format!("{name}={value}"))
            .collect();
        let mut req = match &form {
            Some(fields) => {
                let body =
                    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(fields.iter()).finish();
                self.http
                    .post(url.clone())
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body)
            }
            None => self.http.get(url.clone()),
        };
        if !cookie.is_empty() {
            req = req.header("cookie", cookie.join("; "));
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        for set in res.headers().get_all("set-cookie") {
            self.keep(set.to_str().unwrap_or_default());
        }
        let status = res.status().as_u16();
        let location = res
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .and_then(|l| url.join(l).ok())
            .filter(|_| (300..400).contains(&status));
        let body = res.text().await.unwrap_or_default();
        Step { url, status, location, body }
    }

    fn keep(&self, header: &str) {
        let mut parts = header.split(';').map(str::trim);
        let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else { return };
        let mut path = "/".to_string();
        let mut gone = value.is_empty();
        for attribute in parts {
            let lower = attribute.to_ascii_lowercase();
            if lower.starts_with("path=") {
                path = attribute["path=".len()..].to_string();
            }
            if lower.starts_with("expires=") && lower.contains("1970") {
                gone = true;
            }
        }
        let mut cookies = self.cookies.lock().unwrap();
        cookies.retain(|(n, p, _)| !(n == name && *p == path));
        if !gone {
            cookies.push((name.to_string(), path, value.to_string()));
        }
    }

    /// Goes to `url` and on through the redirects, until one would go
    /// where `stop` says (that redirect is the answer) or an answer is no
    /// redirect.
    pub async fn walk(&self, url: &str, stop: &dyn Fn(&Url) -> bool) -> Step {
        self.walk_from(url.parse().expect("a URL"), None, stop).await
    }

    async fn walk_from(
        &self,
        mut url: Url,
        mut form: Option<Vec<(String, String)>>,
        stop: &dyn Fn(&Url) -> bool,
    ) -> Step {
        loop {
            let step = self.send(url, form.take()).await;
            match &step.location {
                Some(next) if !stop(next) => url = next.clone(),
                _ => return step,
            }
        }
    }

    /// From the board's start address, signs in as `login` on the
    /// provider's login page, and gives the provider's redirect back to
    /// the board: the callback address, not yet visited.
    pub async fn sign_in(&self, start: &str, login: &str) -> Url {
        let at_callback = |u: &Url| u.path() == CALLBACK_PATH;
        let page = self.walk(start, &at_callback).await;
        assert_eq!(page.status, 200, "the provider's login page at {}: {}", page.url, page.body);
        let action =
            form_action(&page.body).unwrap_or_else(|| panic!("a form on {}: {}", page.url, page.body));
        let fields = [("prompt", "login"), ("login", login), ("password", "any password")];
        let form = fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let done = self.walk_from(page.url.join(&action).unwrap(), Some(form), &at_callback).await;
        done.location.filter(at_callback).unwrap_or_else(|| {
            panic!("the provider does not send the browser back to the board: {} {}", done.status, done.body)
        })
    }
}

/// The `action` of the first form of a page.
fn form_action(html: &str) -> Option<String> {
    let form = &html[html.find("<form")?..];
    let start = form.find("action=\"")? + "action=\"".len();
    let end = form[start..].find('"')?;
    Some(form[start..start + end].replace("&amp;", "&"))
}
