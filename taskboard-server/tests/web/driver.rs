//! A small W3C WebDriver client over reqwest, driving Debian's chromium
//! through chromedriver (docs/decisions.md, web board). Each test starts
//! its own chromedriver on a free port and a browser with a fresh profile.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn find_program(env: &str, names: &[&str]) -> String {
    if let Ok(p) = std::env::var(env) {
        return p;
    }
    for name in names {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let path = std::path::Path::new(dir).join(name);
            if path.is_file() {
                return path.display().to_string();
            }
        }
    }
    panic!(
        "the browser tests need {} (set {env} or install Debian's packages: \
         apt-get install -y chromium chromium-driver)",
        names.join(" or ")
    );
}

/// One browser test at a time: several Chromiums at once on a busy
/// machine make every one of them slow.
static TURN: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// The turn of a browser test; take it before starting browsers.
pub async fn turn() -> tokio::sync::SemaphorePermit<'static> {
    TURN.acquire().await.expect("the semaphore is never closed")
}

/// A browser session; the browser and chromedriver end with it.
pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    session: String,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group: chromedriver, the browser and every helper
        // process the browser started, which would outlive chromedriver.
        if let Some(group) = i32::try_from(self.driver.id()).ok().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

#[derive(Clone, Debug)]
pub struct Element(String);

impl Browser {
    pub async fn start() -> Browser {
        let chromedriver = find_program("TASKBOARD_CHROMEDRIVER", &["chromedriver"]);
        let chromium = find_program("TASKBOARD_CHROMIUM", &["chromium", "chromium-browser", "google-chrome"]);
        let mut driver = Command::new(&chromedriver)
            .arg("--port=0")
            // A group of its own, which the browser's processes join.
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {chromedriver}: {e} (apt-get install -y chromium chromium-driver)")
            });
        // chromedriver names its port once it listens.
        let mut lines = BufReader::new(driver.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines.next().expect("chromedriver ended before it listened").unwrap();
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest.trim_end_matches('.').trim().parse::<u16>().expect("a port");
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let profile = tempfile::tempdir().unwrap();
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run",
                    "--disable-dev-shm-usage", "--window-size=1400,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
            "timeouts": {"script": 30000},
        }}});
        let base = format!("http://127.0.0.1:{port}");
        let res: Value =
            http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
        let session = res["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromedriver refused a session: {res}"))
            .to_string();
        Browser { driver, http, session: format!("{base}/session/{session}"), _profile: profile }
    }

    async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_cmd(method, path, body)
            .await
            .unwrap_or_else(|(error, message)| panic!("webdriver {path}: {error}: {message}"))
    }

    /// A command, or the WebDriver error (its code and message) it ended in.
    async fn try_cmd(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, (String, String)> {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res: Value = req.send().await.expect("chromedriver answers").json().await.unwrap();
        match res["value"].get("error") {
            Some(err) => {
                Err((err.as_str().unwrap_or_default().to_string(), res["value"]["message"].to_string()))
            }
            None => Ok(res["value"].clone()),
        }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.cmd(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({"url": url})).await;
    }

    /// Runs `script` (a function body; `arguments` as usual) in the page.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": args})).await
    }

    /// Runs `script` in the page until it returns something truthy; the
    /// page is polled, with a deadline, never waited on blindly.
    pub async fn wait_for(&self, what: &str, script: &str, args: Vec<Value>) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v = self.js(script, args.clone()).await;
            if !(v.is_null() || v == json!(false) || v == json!(0) || v == json!("")) {
                return v;
            }
            if Instant::now() > deadline {
                let text = self.js("return document.body.innerText.slice(0, 2000)", vec![]).await;
                panic!("timed out waiting for {what}; the page shows:\n{}", text.as_str().unwrap_or(""));
            }
            tokio::task::yield_now().await;
            // One animation frame of the page, so the poll follows its renders.
            self.post(
                "/execute/async",
                json!({"script": "requestAnimationFrame(() => arguments[0]())", "args": []}),
            )
            .await;
        }
    }

    /// Runs an asynchronous script; it calls its last argument with the result.
    pub async fn post_async(&self, script: &str) -> Value {
        self.post("/execute/async", json!({"script": script, "args": []})).await
    }

    pub async fn find(&self, css: &str) -> Element {
        let v = self.wait_for(css, "return document.querySelector(arguments[0])", vec![json!(css)]).await;
        Element(v[ELEMENT].as_str().unwrap().to_string())
    }

    pub fn element_arg(e: &Element) -> Value {
        json!({ELEMENT: e.0})
    }

    /// Clicks the element `css` selects. When the page renders it anew
    /// between finding and clicking (a live event came in), the click
    /// finds no element and did not happen: it finds the new one.
    pub async fn click_on(&self, css: &str) {
        for _ in 0..20 {
            let e = self.find(css).await;
            let path = format!("/element/{}/click", e.0);
            match self.try_cmd(reqwest::Method::POST, &path, Some(json!({}))).await {
                Ok(_) => return,
                Err((error, _)) if error == "stale element reference" => continue,
                Err((error, message)) => panic!("webdriver {path}: {error}: {message}"),
            }
        }
        panic!("{css} was rendered anew under every one of 20 clicks");
    }

    pub async fn type_into(&self, e: &Element, text: &str) {
        self.post(&format!("/element/{}/value", e.0), json!({"text": text})).await;
    }

    /// Drags `from` onto the middle of `to` with real pointer input.
    pub async fn drag(&self, from: &Element, to: &Element) {
        let (f, t) = (Self::element_arg(from), Self::element_arg(to));
        self.post(
            "/actions",
            json!({"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
                {"type": "pointerMove", "origin": f, "x": 0, "y": 0, "duration": 0},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerMove", "origin": f, "x": 20, "y": 10, "duration": 50},
                {"type": "pointerMove", "origin": t, "x": 0, "y": 0, "duration": 100},
                {"type": "pointerMove", "origin": t, "x": 0, "y": 5, "duration": 50},
                {"type": "pointerUp", "button": 0},
            ]}]}),
        )
        .await;
        self.cmd(reqwest::Method::DELETE, "/actions", None).await;
    }

    /// Presses `chord` (WebDriver key codes) together on the focused element.
    pub async fn press(&self, chord: &[&str]) {
        let mut actions: Vec<Value> = chord.iter().map(|k| json!({"type": "keyDown", "value": k})).collect();
        actions.extend(chord.iter().rev().map(|k| json!({"type": "keyUp", "value": k})));
        self.post("/actions", json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}))
            .await;
    }

    pub async fn screenshot_png(&self) -> Vec<u8> {
        use base64::Engine;
        let v = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap()
    }
}
