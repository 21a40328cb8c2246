//! The configuration file (`--config FILE`, TOML).
//!
//! Its keys are the long names of the server's flags (`listen`,
//! `data-dir`, `max-upload-bytes` …), read from the command-line
//! definition itself, so every flag is a key without a list to keep. A
//! value of the file becomes that flag's default before the command line
//! is parsed, which gives the precedence flag, environment, file,
//! built-in default. An unknown key is an error naming it and the
//! nearest known one; a value is checked by the flag's own parser.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};

/// The flag naming the configuration file; not a key of the file.
pub const CONFIG_FLAG: &str = "config";

/// The values of a configuration file, each as the strings a command
/// line would give the flag.
#[derive(Debug, Default)]
pub struct FileValues {
    pub path: PathBuf,
    values: BTreeMap<String, Vec<String>>,
}

/// Flags that are no setting of the server.
fn is_setting(arg: &Arg) -> bool {
    let id = arg.get_id().as_str();
    arg.get_long().is_some() && !matches!(id, CONFIG_FLAG | "help" | "version")
}

/// The keys a file may hold: the long names of the command's flags.
pub fn keys(cmd: &Command) -> Vec<&str> {
    cmd.get_arguments().filter(|a| is_setting(a)).filter_map(Arg::get_long).collect()
}

impl FileValues {
    /// Reads and checks `path` against the flags of `cmd`.
    pub fn load(cmd: &Command, path: &Path) -> Result<FileValues, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| format!("{shown}: not valid TOML: {}", e.to_string().trim_end()))?;
        let mut values = BTreeMap::new();
        for (key, value) in table {
            let Some(arg) = cmd.get_arguments().find(|a| is_setting(a) && a.get_long() == Some(key.as_str()))
            else {
                return Err(unknown_key(cmd, &shown, &key));
            };
            let strings = as_strings(arg, &value).map_err(|e| format!("{shown}: {key}: {e}"))?;
            check_values(arg, &strings).map_err(|e| format!("{shown}: {key}: {e}"))?;
            values.insert(key, strings);
        }
        Ok(FileValues { path: path.to_path_buf(), values })
    }

    pub fn count(&self) -> usize {
        self.values.len()
    }

    /// `cmd` with the file's values as the defaults of their flags.
    pub fn as_defaults(&self, mut cmd: Command) -> Command {
        for (key, strings) in &self.values {
            let Some(id) =
                cmd.get_arguments().find(|a| a.get_long() == Some(key)).map(|a| a.get_id().clone())
            else {
                continue;
            };
            let strings = strings.clone();
            cmd = cmd.mut_arg(id, move |a| a.default_values(strings));
        }
        cmd
    }

    fn holds(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }
}

/// A configuration file holding secrets that others than the server may
/// read (docs/decisions.md 20.w).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadableSecrets {
    pub path: PathBuf,
    /// The file's permission bits.
    pub mode: u32,
    /// The keys of the file that hold a secret.
    pub keys: Vec<String>,
}

impl std::fmt::Display for ReadableSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        write!(
            f,
            "the configuration file {path} holds secrets ({}) and is readable by others than the server \
             (mode {:04o}); run `chmod 600 {path}` (or 640 with the server's own group)",
            self.keys.join(", "),
            self.mode & 0o7777
        )
    }
}

impl FileValues {
    /// The file's keys that hold a secret: those of the flags whose
    /// environment value `--help` hides (`jwt-secret`, `database`,
    /// `oidc-client-secret`, `metrics-token`).
    fn secret_keys(&self, cmd: &Command) -> Vec<String> {
        let secret =
            |key: &str| cmd.get_arguments().any(|a| a.get_long() == Some(key) && a.is_hide_env_values_set());
        self.values.keys().filter(|k| secret(k)).cloned().collect()
    }

    /// Whether the file holds a secret that others than the server may
    /// read: readable by every user, or by a group that is not the
    /// server's own (the Debian package's `root:taskboard 0640` is not).
    pub fn readable_secrets(&self, cmd: &Command) -> Option<ReadableSecrets> {
        let keys = self.secret_keys(cmd);
        if keys.is_empty() {
            return None;
        }
        let meta = std::fs::metadata(&self.path).ok()?;
        exposed(&meta).then(|| ReadableSecrets { path: self.path.clone(), mode: mode(&meta), keys })
    }
}

#[cfg(unix)]
fn mode(meta: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&meta.permissions())
}

#[cfg(not(unix))]
fn mode(_: &std::fs::Metadata) -> u32 {
    0
}

#[cfg(unix)]
fn exposed(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mode = mode(meta);
    mode & 0o004 != 0 || (mode & 0o040 != 0 && Some(meta.gid()) != own_group())
}

#[cfg(not(unix))]
fn exposed(_: &std::fs::Metadata) -> bool {
    false
}

/// The server's effective group.
#[cfg(target_os = "linux")]
fn own_group() -> Option<u32> {
    Some(rustix::process::getegid().as_raw())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn own_group() -> Option<u32> {
    None
}

fn unknown_key(cmd: &Command, file: &impl std::fmt::Display, key: &str) -> String {
    let nearest = keys(cmd)
        .into_iter()
        .map(|k| (strsim::jaro_winkler(key, k), k))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k);
    match nearest {
        Some(k) => format!("{file}: unknown key `{key}`; the nearest known key is `{k}`"),
        None => format!("{file}: unknown key `{key}`"),
    }
}

/// A TOML value as the command-line words of its flag: a string as it
/// is, a number or a boolean written out, an array (for a flag taking
/// several values) element by element.
fn as_strings(arg: &Arg, value: &toml::Value) -> Result<Vec<String>, String> {
    let one = |v: &toml::Value| -> Result<String, String> {
        match v {
            toml::Value::String(s) => Ok(s.clone()),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(f.to_string()),
            toml::Value::Boolean(b) => Ok(b.to_string()),
            other => Err(format!("a {} is not a value of this setting", other.type_str())),
        }
    };
    let several = matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    match value {
        toml::Value::Array(items) if several => items.iter().map(one).collect(),
        toml::Value::Array(_) => Err("takes one value, not an array".into()),
        v if is_switch(arg) && !v.is_bool() => Err("takes true or false".into()),
        v => Ok(vec![one(v)?]),
    }
}

fn is_switch(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
}

/// Runs the flag's own parser over the values, as a command line would.
fn check_values(arg: &Arg, strings: &[String]) -> Result<(), String> {
    if is_switch(arg) {
        return Ok(());
    }
    let long = arg.get_long().unwrap_or_default();
    let single = Arg::new("value")
        .long(long.to_string())
        .value_parser(arg.get_value_parser().clone())
        .action(arg.get_action().clone())
        .num_args(arg.get_num_args().unwrap_or_default());
    let words: Vec<String> = strings.iter().map(|s| format!("--{long}={s}")).collect();
    Command::new("config").no_binary_name(true).arg(single).try_get_matches_from(words).map(|_| ()).map_err(
        |e| {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            first.strip_prefix("error: ").unwrap_or(first).to_string()
        },
    )
}

/// Parses the command line of a program whose flags a file may set: the
/// file named by `--config` (or its environment variable) fills in the
/// defaults, then the command line and the environment are parsed over
/// them. Exits with clap's message and status on a bad command line, and
/// with status 2 and the file's problem on a bad file.
pub fn parse(cmd: Command, argv: Vec<OsString>) -> (ArgMatches, Option<FileValues>) {
    let file = match config_path(&cmd, &argv) {
        Some(path) => match FileValues::load(&cmd, &path) {
            Ok(values) => Some(values),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        },
        None => None,
    };
    let cmd = match &file {
        Some(f) => f.as_defaults(cmd),
        None => cmd,
    };
    (cmd.get_matches_from(argv), file)
}

/// The path `--config` names on the command line, or else its environment
/// variable, without judging the rest of the command line yet.
fn config_path(cmd: &Command, argv: &[OsString]) -> Option<PathBuf> {
    let matches = cmd.clone().ignore_errors(true).try_get_matches_from(argv).ok()?;
    matches.get_one::<PathBuf>(CONFIG_FLAG).cloned()
}

/// Where an effective value came from.
fn source(matches: &ArgMatches, file: Option<&FileValues>, arg: &Arg) -> &'static str {
    let id = arg.get_id().as_str();
    match matches.value_source(id) {
        Some(ValueSource::CommandLine) => "flag",
        Some(ValueSource::EnvVariable) => "environment",
        Some(ValueSource::DefaultValue)
            if file.is_some_and(|f| f.holds(arg.get_long().unwrap_or_default())) =>
        {
            "file"
        }
        _ => "default",
    }
}

/// The effective configuration as a TOML file that `--config` reads
/// back, each line with where its value came from; secrets (flags whose
/// environment value the help hides) are masked, unset settings are
/// comments.
pub fn print(cmd: &Command, matches: &ArgMatches, file: Option<&FileValues>) -> String {
    let mut out = String::new();
    if let Some(f) = file {
        out.push_str(&format!("# configuration file: {}\n", f.path.display()));
    }
    for arg in cmd.get_arguments().filter(|a| is_setting(a)) {
        let key = arg.get_long().unwrap_or_default();
        let id = arg.get_id().as_str();
        let from = source(matches, file, arg);
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|vs| vs.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let line = if raw.is_empty() {
            format!("# {key} is not set")
        } else if arg.is_hide_env_values_set() {
            format!("# {key} = \"********\" (secret, from the {from})")
        } else {
            let value = if is_switch(arg) {
                raw[0].clone()
            } else if raw.len() > 1 || matches!(arg.get_action(), ArgAction::Append) {
                let items: Vec<String> = raw.iter().map(|r| typed(r)).collect();
                format!("[{}]", items.join(", "))
            } else {
                typed(&raw[0])
            };
            format!("{key} = {value}  # {from}")
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A word as a TOML value: a whole number as a number, anything else as
/// a string.
fn typed(word: &str) -> String {
    if !word.is_empty() && word.len() < 19 && word.bytes().all(|b| b.is_ascii_digit()) {
        word.to_string()
    } else {
        toml::Value::String(word.to_string()).to_string()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn command() -> Command {
        Command::new("server")
            .arg(Arg::new("listen").long("listen"))
            .arg(Arg::new("jwt_secret").long("jwt-secret").env("JWT").hide_env_values(true))
    }

    #[test]
    fn a_file_holding_a_secret_that_others_may_read_is_named_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.toml");
        std::fs::write(&path, "listen = \"127.0.0.1:1\"\njwt-secret = \"s\"\n").unwrap();
        let cmd = command();
        let check = |mode: u32| {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            FileValues::load(&cmd, &path).unwrap().readable_secrets(&cmd)
        };
        let found = check(0o644).expect("readable by everyone");
        assert_eq!((found.mode & 0o777, found.keys.as_slice()), (0o644, &["jwt-secret".to_string()][..]));
        let text = found.to_string();
        assert!(
            text.contains("server.toml") && text.contains("0644") && text.contains("chmod 600"),
            "{text}"
        );
        assert_eq!(check(0o600), None);
        // The server's own group may read it (the Debian package's 0640).
        assert_eq!(check(0o640), None);

        std::fs::write(&path, "listen = \"127.0.0.1:1\"\n").unwrap();
        assert_eq!(check(0o644), None, "no secret in it");
    }
}
