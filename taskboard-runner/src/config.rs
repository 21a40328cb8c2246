//! The runner's configuration file (TOML): where the board is, where the
//! runner keeps its state, and for each agent its token and how to start
//! it. README.md, "The runner", shows an example.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use taskboard_core::{Error, Result};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerConfig {
    /// The server; else `--server`, `TASKBOARD_SERVER` or the stored login.
    pub server: Option<String>,
    /// How the runner names itself on its runs; default `HOST:PID`.
    pub name: Option<String>,
    /// Pid files, cached clones and workspaces. Default
    /// `$XDG_STATE_HOME/taskboard/runner` (`~/.local/state/…`). Two
    /// runners running at once need two directories.
    pub state_dir: Option<PathBuf>,
    /// A project's repository may be a local one (`file:///…` or an
    /// absolute path) on the runner's machine (default false: only
    /// `https://`, `ssh://` and `USER@HOST:PATH`). A local address lets
    /// whoever sets a project's `repo_urls` have any repository the
    /// runner's user can read cloned and shown to an agent.
    #[serde(default)]
    pub allow_local_repos: bool,
    /// Runs at a time over all agents (default 4).
    #[serde(default = "default_max_runs")]
    pub max_runs: usize,
    /// The lease a run holds its task under, renewed every third of it
    /// (10–86,400 seconds, default 60).
    #[serde(default = "default_lease")]
    pub lease_seconds: u32,
    /// A finished run's workspace is removed after this many hours
    /// (default 24; 0 removes it when the run ends).
    #[serde(default = "default_keep")]
    pub keep_workspaces_hours: u64,
    #[serde(default, rename = "agent")]
    pub agents: Vec<AgentEntry>,
}

/// How an agent is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentMode {
    /// Any program: the task on stdin (or in a file), exit 0 succeeds.
    Command,
    /// An Agent Client Protocol agent, spoken to over its stdin and
    /// stdout (runner/acp.rs).
    Acp,
}

/// Where a command agent reads its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptVia {
    #[default]
    Stdin,
    /// `TASK.md` beside the workspace, its path in `TASKBOARD_PROMPT_FILE`.
    File,
}

/// How an ACP agent's permission requests are answered (docs/decisions.md,
/// 19.8): `"ask"` (the default) makes each the run's question for a
/// person; `"allow"` has the runner allow each itself; a list of the
/// protocol's tool kinds (`["read", "edit"]`) has it allow those and ask
/// for the rest.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "PermissionsText")]
pub enum Permissions {
    #[default]
    Ask,
    Allow,
    /// Tool kinds as the protocol names them.
    Kinds(Vec<String>),
}

/// The tool kinds of the Agent Client Protocol.
pub const TOOL_KINDS: [&str; 10] =
    ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"];

#[derive(Deserialize)]
#[serde(untagged)]
enum PermissionsText {
    Word(String),
    Kinds(Vec<String>),
}

impl TryFrom<PermissionsText> for Permissions {
    type Error = String;

    fn try_from(text: PermissionsText) -> std::result::Result<Permissions, String> {
        let kinds = TOOL_KINDS.join(", ");
        match text {
            PermissionsText::Word(w) if w == "ask" => Ok(Permissions::Ask),
            PermissionsText::Word(w) if w == "allow" => Ok(Permissions::Allow),
            PermissionsText::Word(w) => {
                Err(format!("permissions = {w:?}: give \"ask\", \"allow\" or a list of tool kinds ({kinds})"))
            }
            PermissionsText::Kinds(list) => {
                if let Some(k) = list.iter().find(|k| !TOOL_KINDS.contains(&k.as_str())) {
                    return Err(format!("permissions: {k:?} is not a tool kind of the protocol ({kinds})"));
                }
                Ok(Permissions::Kinds(list))
            }
        }
    }
}

impl Permissions {
    /// Whether a permission request for a tool of `kind` (its protocol
    /// name; None when the agent did not say) is the runner's to allow.
    pub fn allows(&self, kind: Option<&str>) -> bool {
        match self {
            Permissions::Ask => false,
            Permissions::Allow => true,
            Permissions::Kinds(kinds) => kind.is_some_and(|k| kinds.iter().any(|allowed| allowed == k)),
        }
    }

    /// How the file says it, for the transcript.
    pub fn describe(&self) -> String {
        match self {
            Permissions::Ask => "\"ask\"".to_string(),
            Permissions::Allow => "\"allow\"".to_string(),
            Permissions::Kinds(kinds) => format!("{kinds:?}"),
        }
    }
}

/// One `[[agent]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    /// The agent member's slug (checked against its token).
    pub slug: String,
    /// The agent's token, or where to read it.
    pub token: Option<String>,
    pub token_env: Option<String>,
    pub token_file: Option<PathBuf>,
    #[serde(default = "default_mode")]
    pub mode: AgentMode,
    /// The program and its arguments.
    #[serde(default)]
    pub command: Vec<String>,
    /// Where a command agent reads its task (default stdin); an ACP agent
    /// gets it in `session/prompt`.
    pub prompt: Option<PromptVia>,
    /// Extra environment of the program.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Overrides the agent's `model` in `TASKBOARD_MODEL`.
    pub model: Option<String>,
    /// A run is stopped and ends `timed_out` after this long (default 3,600).
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Runs of this agent at a time in this runner (default 1).
    #[serde(default = "default_agent_runs")]
    pub max_runs: usize,
    /// How an ACP agent's permission requests are answered (default
    /// `"ask"`).
    #[serde(default)]
    pub permissions: Permissions,
}

fn default_max_runs() -> usize {
    4
}
fn default_lease() -> u32 {
    60
}
fn default_keep() -> u64 {
    24
}
fn default_mode() -> AgentMode {
    AgentMode::Command
}
fn default_timeout() -> u64 {
    3600
}
fn default_agent_runs() -> usize {
    1
}

/// `$XDG_CONFIG_HOME/taskboard/runner.toml`, else `~/.config/taskboard/runner.toml`.
pub fn default_path() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let config = nonempty("XDG_CONFIG_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".config")))?;
    Some(config.join("taskboard").join("runner.toml"))
}

fn default_state_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let state = nonempty("XDG_STATE_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".local/state")))?;
    Some(state.join("taskboard").join("runner"))
}

impl RunnerConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<RunnerConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::bad_request(format!("{}: {e}", path.display())))?;
        let config: RunnerConfig =
            toml::from_str(&text).map_err(|e| Error::bad_request(format!("{}: {e}", path.display())))?;
        config.check().map_err(|e| Error::bad_request(format!("{}: {}", path.display(), e.detail())))?;
        Ok(config)
    }

    fn check(&self) -> Result<()> {
        if self.max_runs == 0 {
            return Err(Error::bad_request("max_runs must be at least 1"));
        }
        if !(10..=86_400).contains(&self.lease_seconds) {
            return Err(Error::bad_request(format!(
                "lease_seconds must be 10-86400, got {}",
                self.lease_seconds
            )));
        }
        if self.agents.is_empty() {
            return Err(Error::bad_request("no [[agent]]: the runner has nobody to run"));
        }
        for (i, a) in self.agents.iter().enumerate() {
            let at = format!("agent[{i}] ({})", a.slug);
            if self.agents[..i].iter().any(|b| b.slug == a.slug) {
                return Err(Error::bad_request(format!("{at}: the slug appears twice")));
            }
            let sources = [a.token.is_some(), a.token_env.is_some(), a.token_file.is_some()];
            if sources.iter().filter(|s| **s).count() != 1 {
                return Err(Error::bad_request(format!("{at}: give one of token, token_env, token_file")));
            }
            if a.mode == AgentMode::Acp && a.prompt.is_some() {
                return Err(Error::bad_request(format!(
                    "{at}: prompt is for mode = \"command\"; an ACP agent gets its task in session/prompt"
                )));
            }
            if a.mode == AgentMode::Command && a.permissions != Permissions::Ask {
                return Err(Error::bad_request(format!(
                    "{at}: permissions is for mode = \"acp\"; a command agent asks no permission"
                )));
            }
            if a.command.is_empty() || a.command[0].is_empty() {
                return Err(Error::bad_request(format!("{at}: command must name a program")));
            }
            if a.command[0].contains('/') && !Path::new(&a.command[0]).is_absolute() {
                return Err(Error::bad_request(format!(
                    "{at}: command {:?} is a relative path, which the agent's workspace would resolve, \
                     running a program of the repository it works on; name a program on PATH or give \
                     its absolute path",
                    a.command[0]
                )));
            }
            if a.max_runs == 0 || a.timeout_seconds == 0 {
                return Err(Error::bad_request(format!(
                    "{at}: max_runs and timeout_seconds must be at least 1"
                )));
            }
        }
        Ok(())
    }

    /// The state directory, made absolute.
    pub fn state_dir(&self) -> Result<PathBuf> {
        let dir = match &self.state_dir {
            Some(d) => d.clone(),
            None => default_state_dir()
                .ok_or_else(|| Error::bad_request("cannot find a state directory: set state_dir or HOME"))?,
        };
        Ok(std::path::absolute(dir)?)
    }
}

impl AgentEntry {
    /// The agent's token, from where the file says.
    pub fn token(&self) -> Result<String> {
        let token = match (&self.token, &self.token_env, &self.token_file) {
            (Some(t), _, _) => t.clone(),
            (_, Some(var), _) => std::env::var(var).map_err(|_| {
                Error::bad_request(format!("agent {}: the environment has no {var}", self.slug))
            })?,
            (_, _, Some(path)) => std::fs::read_to_string(path)
                .map_err(|e| Error::bad_request(format!("agent {}: {}: {e}", self.slug, path.display())))?,
            _ => return Err(Error::bad_request(format!("agent {}: no token", self.slug))),
        };
        let token = token.trim().to_string();
        if token.is_empty() {
            return Err(Error::bad_request(format!("agent {}: the token is empty", self.slug)));
        }
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(lines: &str) -> Result<RunnerConfig> {
        let text = format!("[[agent]]\nslug = \"a\"\ntoken = \"t\"\n{lines}\n");
        let config: RunnerConfig = toml::from_str(&text).map_err(|e| Error::bad_request(e.to_string()))?;
        config.check()?;
        Ok(config)
    }

    #[test]
    fn an_acp_agent_needs_a_command_and_reads_its_task_from_the_protocol() {
        let config = agent("mode = \"acp\"\ncommand = [\"gemini\", \"--experimental-acp\"]").unwrap();
        assert_eq!(config.agents[0].mode, AgentMode::Acp);
        let e = agent("mode = \"acp\"\ncommand = [\"gemini\"]\nprompt = \"file\"").unwrap_err();
        assert!(e.detail().contains("prompt is for mode = \"command\""), "{}", e.detail());
        let e = agent("mode = \"acp\"").unwrap_err();
        assert!(e.detail().contains("command must name a program"), "{}", e.detail());
        assert!(agent("mode = \"acp2\"\ncommand = [\"x\"]").is_err());
        assert_eq!(agent("command = [\"x\"]").unwrap().agents[0].mode, AgentMode::Command);
    }

    #[test]
    fn permissions_are_asked_allowed_or_allowed_by_tool_kind() {
        let acp = "mode = \"acp\"\ncommand = [\"claude-code-acp\"]";
        assert_eq!(agent(acp).unwrap().agents[0].permissions, Permissions::Ask);
        let allow = agent(&format!("{acp}\npermissions = \"allow\"")).unwrap();
        assert_eq!(allow.agents[0].permissions, Permissions::Allow);
        let kinds = agent(&format!("{acp}\npermissions = [\"read\", \"edit\"]")).unwrap();
        let kinds = &kinds.agents[0].permissions;
        assert_eq!(*kinds, Permissions::Kinds(vec!["read".into(), "edit".into()]));
        assert!(kinds.allows(Some("edit")) && kinds.allows(Some("read")));
        assert!(!kinds.allows(Some("execute")) && !kinds.allows(None), "the rest are asked");
        assert!(Permissions::Allow.allows(None) && !Permissions::Ask.allows(Some("read")));
        let e = agent(&format!("{acp}\npermissions = \"always\"")).unwrap_err();
        assert!(e.detail().contains("give \"ask\", \"allow\" or a list of tool kinds"), "{}", e.detail());
        let e = agent(&format!("{acp}\npermissions = [\"write\"]")).unwrap_err();
        assert!(e.detail().contains("\"write\" is not a tool kind"), "{}", e.detail());
        let e = agent("command = [\"x\"]\npermissions = \"allow\"").unwrap_err();
        assert!(e.detail().contains("permissions is for mode = \"acp\""), "{}", e.detail());
    }

    #[test]
    fn local_repositories_are_refused_unless_the_file_allows_them() {
        assert!(!agent("command = [\"x\"]").unwrap().allow_local_repos);
        let text = "allow_local_repos = true\n[[agent]]\nslug = \"a\"\ntoken = \"t\"\ncommand = [\"x\"]\n";
        let config: RunnerConfig = toml::from_str(text).unwrap();
        assert!(config.allow_local_repos);
    }

    #[test]
    fn an_agents_program_is_never_a_relative_path_into_its_workspace() {
        for command in ["[\"./scripts/agent.sh\"]", "[\"scripts/agent\"]", "[\"../agent\", \"x\"]"] {
            let e = agent(&format!("command = {command}")).unwrap_err();
            assert!(e.detail().contains("is a relative path"), "{command}: {}", e.detail());
        }
        for command in ["[\"/usr/local/bin/agent\"]", "[\"codex\", \"./x\"]", "[\"sh\", \"-c\", \"true\"]"] {
            agent(&format!("command = {command}")).unwrap();
        }
    }

    #[test]
    fn the_readme_example_is_a_valid_configuration() {
        let readme = include_str!("../../README.md");
        let from = readme.find("The configuration file (default").expect("the README's runner section");
        let block = &readme[from..];
        let start = block.find("```toml\n").expect("a TOML block") + "```toml\n".len();
        let end = start + block[start..].find("```").expect("the block's end");
        let config: RunnerConfig = toml::from_str(&block[start..end]).unwrap();
        config.check().unwrap();
        let modes: Vec<AgentMode> = config.agents.iter().map(|a| a.mode).collect();
        assert!(modes.contains(&AgentMode::Acp) && modes.contains(&AgentMode::Command), "{modes:?}");
        // The agent's program is the runner machine's, never one of the
        // repository it works on (README says why): no shell running a
        // script of the workspace, no npx resolving a package there.
        for a in &config.agents {
            let program = Path::new(&a.command[0]).file_name().and_then(|n| n.to_str()).unwrap_or("");
            assert!(!["sh", "bash", "dash", "npx", "npm", "node"].contains(&program), "{:?}", a.command);
            assert!(a.mode == AgentMode::Acp || Path::new(&a.command[0]).is_absolute(), "{:?}", a.command);
        }
        assert!(!config.allow_local_repos);
    }
}
