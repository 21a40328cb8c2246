//! Claude Code as an Agent Client Protocol agent for a runner's
//! `[[agent]]`: Zed's adapter `@zed-industries/claude-code-acp` (with the
//! Claude Agent SDK and its bundled Claude Code), pinned by
//! tests/claude-code/package-lock.json and installed under the target
//! directory by tests/claude-code/setup.sh on first use, pointed at a
//! [`ModelServer`](crate::model_server::ModelServer) and kept on loopback.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

/// The installed adapter's directory (`node`, `node_modules`,
/// `preload.js`, `claude.mjs`), installed once per test run. A machine
/// that cannot install it fails the test, saying why.
pub fn installed() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
        let exe = std::env::current_exe().expect("the test executable's path");
        // <target>/<profile>/deps/<test binary>
        let target = exe.ancestors().nth(3).expect("the target directory");
        let out = std::process::Command::new("bash")
            .arg(root.join("tests/claude-code/setup.sh"))
            .arg(target)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "Claude Code and its ACP adapter could not be installed by tests/claude-code/setup.sh \
             (it needs node 20.18 or later and npm, which tests/setup.sh installs, or python3 for \
             a Node.js wheel, and the npm registry): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).expect("a path").trim())
    })
}

/// How a runner starts Claude Code: its command and environment.
#[derive(Clone, Debug)]
pub struct ClaudeCode {
    pub command: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Claude Code's home directory, fresh.
    pub home: PathBuf,
    /// Where the preload writes what it refused, a JSON line each.
    pub refusals: PathBuf,
}

impl ClaudeCode {
    /// Claude Code calling the model at `model_url`, its home and the
    /// preload's log in `dir` (created).
    ///
    /// The environment is what works offline: the model server as the
    /// API, any key (no login, no `authenticate`), no telemetry, update,
    /// error reports or other traffic Claude Code can be told to leave
    /// out, and a fresh `HOME` so no settings or sessions of the machine
    /// apply. `NODE_OPTIONS` loads the preload into the adapter and
    /// `CLAUDE_CODE_EXECUTABLE` (claude.mjs) into Claude Code, whose
    /// environment the SDK makes without `NODE_OPTIONS`: both refuse every
    /// name lookup but `localhost` and every connection outside loopback.
    pub fn new(model_url: &str, dir: &Path) -> ClaudeCode {
        let installed = installed();
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("Claude Code's home");
        let refusals = dir.join("loopback-refusals.jsonl");
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let preload = installed.join("preload.js");
        let env: BTreeMap<String, String> = [
            ("ANTHROPIC_BASE_URL", model_url.to_string()),
            ("ANTHROPIC_API_KEY", "scripted-model-key".to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
            ("DISABLE_TELEMETRY", "1".to_string()),
            ("DISABLE_AUTOUPDATER", "1".to_string()),
            ("DISABLE_ERROR_REPORTING", "1".to_string()),
            ("CLAUDE_CODE_DISABLE_FAST_MODE", "1".to_string()),
            ("HOME", path(&home)),
            ("NODE_OPTIONS", format!("--require {:?}", path(&preload))),
            ("CLAUDE_CODE_EXECUTABLE", path(&installed.join("claude.mjs"))),
            ("LOOPBACK_ONLY_LOG", path(&refusals)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let adapter = installed.join("node_modules/@zed-industries/claude-code-acp/dist/index.js");
        let command = vec![path(&installed.join("node")), path(&adapter)];
        ClaudeCode { command, env, home, refusals }
    }

    /// The lines of a runner's `[[agent]]` that run it: `mode`, `command`
    /// and `env`.
    pub fn agent_toml(&self) -> String {
        let command: Vec<String> = self.command.iter().map(|c| format!("{c:?}")).collect();
        let env: Vec<String> = self.env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
        format!("mode = \"acp\"\ncommand = [{}]\nenv = {{ {} }}\n", command.join(", "), env.join(", "))
    }

    /// What the preload refused so far: `{pid, refused, target}` each.
    pub fn refused(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.refusals).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}
