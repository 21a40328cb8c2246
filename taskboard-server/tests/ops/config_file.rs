//! `--config FILE`: every flag is a key; precedence flag, environment,
//! file, default; unknown keys and bad values named; `config check` and
//! `config print`.

use std::path::Path;

use crate::support::{Process, http, server_command};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = server_command();
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn line<'a>(printed: &'a str, key: &str) -> &'a str {
    printed
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")) || l.starts_with(&format!("# {key} ")))
        .unwrap_or_else(|| panic!("no line for {key} in:\n{printed}"))
}

#[test]
fn a_flag_wins_over_the_environment_which_wins_over_the_file_which_wins_over_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "server.toml",
        "max-upload-bytes = 1000\nlog-level = \"warn\"\ndev = true\nweb-origin = \"https://file.example\"\n\
         jwt-secret = \"file-secret-value\"\n",
    );
    let (code, printed, err) = run(
        &["--config", &file, "--max-upload-bytes", "5", "config", "print"],
        &[("TASKBOARD_LOG_LEVEL", "debug"), ("TASKBOARD_WEB_ORIGIN", "https://env.example")],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(line(&printed, "max-upload-bytes"), "max-upload-bytes = 5  # flag");
    assert_eq!(line(&printed, "log-level"), "log-level = \"debug\"  # environment");
    assert_eq!(line(&printed, "web-origin"), "web-origin = \"https://env.example\"  # environment");
    assert_eq!(line(&printed, "dev"), "dev = true  # file");
    assert_eq!(line(&printed, "listen"), "listen = \"127.0.0.1:8080\"  # default");
    assert_eq!(line(&printed, "database"), "# database is not set");
    assert!(!printed.contains("file-secret-value"), "secrets are masked:\n{printed}");
    assert!(line(&printed, "jwt-secret").contains("secret, from the file"));

    // What `config print` prints is a file the server reads back.
    let (code, _, err) = run(&["--config", &file, "config", "print"], &[]);
    assert_eq!(code, 0, "{err}");
    let printed_file =
        write(dir.path(), "printed.toml", &run(&["--config", &file, "config", "print"], &[]).1);
    let (code, out, err) = run(&["config", "check", &printed_file], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("valid"), "{out}");
}

#[test]
fn the_login_lifetime_is_a_setting_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "server.toml", "session-lifetime = \"12h\"\n");
    let (code, printed, err) = run(&["--config", &file, "config", "print"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(line(&printed, "session-lifetime"), "session-lifetime = \"12h\"  # file");
    let (code, printed, _) = run(&["config", "print"], &[]);
    assert_eq!(code, 0);
    assert_eq!(line(&printed, "session-lifetime"), "session-lifetime = \"72h\"  # default");
    let bad = write(dir.path(), "bad.toml", "session-lifetime = \"10s\"\n");
    let (code, _, err) = run(&["config", "check", &bad], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("session-lifetime") && err.contains("minute"), "{err}");
}

#[tokio::test]
async fn the_server_runs_from_a_configuration_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("from-file");
    let file = write(
        dir.path(),
        "server.toml",
        &format!("listen = \"127.0.0.1:0\"\ndata-dir = {:?}\ndev = true\n", data.to_str().unwrap()),
    );
    let mut command = server_command();
    command.current_dir(dir.path()).env("TASKBOARD_CONFIG", &file);
    let mut server = Process::start(command, &dir.path().join("server.log"));
    let docs = http().get(format!("{}/openapi.json", server.base)).send().await.unwrap();
    assert_eq!(docs.status(), 200, "dev = true came from the file");
    assert!(data.join("board.redb").exists(), "data-dir came from the file");
    assert!(server.stop().success());
}

#[test]
fn an_unknown_key_is_named_with_the_nearest_known_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "typo.toml", "listen = \"127.0.0.1:0\"\ndata_dri = \"/tmp/x\"\n");
    for args in [vec!["--config", &file], vec!["config", "check", &file]] {
        let (code, _, err) = run(&args, &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("unknown key `data_dri`"), "{err}");
        assert!(err.contains("nearest known key is `data-dir`"), "{err}");
        assert!(err.contains("typo.toml"), "{err}");
    }
}

#[test]
fn a_bad_value_or_bad_toml_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expected) in [
        ("listen = \"nowhere\"\n", "listen: invalid value 'nowhere'"),
        ("max-upload-bytes = \"many\"\n", "max-upload-bytes: invalid value 'many'"),
        ("dev = \"yes\"\n", "dev: takes true or false"),
        ("log-format = \"xml\"\n", "log-format: invalid value 'xml'"),
        ("listen = [\"127.0.0.1:1\"]\n", "listen: takes one value"),
        ("listen = \n", "not valid TOML"),
    ] {
        let file = write(dir.path(), "bad.toml", text);
        let (code, _, err) = run(&["config", "check", &file], &[]);
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(expected), "{text}: {err}");
    }
    let (code, _, err) = run(&["--config", &dir.path().join("absent.toml").to_string_lossy()], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("absent.toml"), "{err}");
}

#[tokio::test]
async fn a_configuration_file_holding_a_secret_that_others_may_read_is_warned_about_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = write(
        dir.path(),
        "server.toml",
        &format!(
            "listen = \"127.0.0.1:0\"\ndata-dir = {:?}\nmetrics-token = \"metrics-secret-value\"\n",
            data.to_str().unwrap()
        ),
    );
    let start = |mode: u32, log: &str| {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let mut command = server_command();
        command.env("TASKBOARD_CONFIG", &file);
        let mut server = Process::start(command, &dir.path().join(log));
        assert!(server.stop().success());
        server.log_text()
    };
    let log = start(0o644, "open.log");
    let warning = log.lines().find(|l| l.contains("WARN")).unwrap_or_else(|| panic!("no warning in:\n{log}"));
    for part in [file.as_str(), "0644", "chmod 600", "metrics-token"] {
        assert!(warning.contains(part), "{part:?} in {warning}");
    }
    assert!(!log.contains("metrics-secret-value"), "{log}");
    let (code, _, err) = run(&["config", "check", &file], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains("chmod 600"), "config check warns too: {err}");

    let log = start(0o600, "closed.log");
    assert!(!log.contains("WARN"), "a private file starts quietly:\n{log}");
}
