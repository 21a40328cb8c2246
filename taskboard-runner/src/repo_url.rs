//! The repository a run's workspace is cloned from (docs/decisions.md,
//! 20.l). A project's `repo_urls` are written on the board, and git
//! reads far more into an address than a place to fetch from: `ext::CMD`
//! runs a command, `-u…` or `--upload-pack=…` is an option, a local path
//! reads any repository of the runner's machine. So the runner clones
//! only the forms below, and git is told to speak only the URL's own
//! protocol (`GIT_ALLOW_PROTOCOL`).

use taskboard_core::{Error, Result};

/// The configuration key that lets the runner clone local repositories.
pub const ALLOW_LOCAL: &str = "allow_local_repos";

/// An address the runner clones: `https://HOST/…`, `ssh://[USER@]HOST[:PORT]/…`
/// or `USER@HOST:PATH`; with [`ALLOW_LOCAL`] also `file:///PATH` and an
/// absolute path. A value that exists is one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoUrl {
    url: String,
    protocol: Protocol,
}

/// The git protocol a [`RepoUrl`] is fetched with, as `GIT_ALLOW_PROTOCOL`
/// names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Https,
    Ssh,
    File,
}

impl Protocol {
    pub fn git_name(self) -> &'static str {
        match self {
            Protocol::Https => "https",
            Protocol::Ssh => "ssh",
            Protocol::File => "file",
        }
    }
}

/// The forms accepted, for the refusals.
const FORMS: &str = "the runner clones https://HOST/PATH, ssh://[USER@]HOST/PATH and USER@HOST:PATH \
    (and, when its configuration sets allow_local_repos = true, file:///PATH and absolute paths)";

fn refused(why: impl std::fmt::Display) -> Error {
    Error::bad_request(format!("the project's repository address is refused: {why}"))
}

impl RepoUrl {
    /// Checks `url` against the accepted forms; `allow_local` is the
    /// runner's `allow_local_repos`.
    pub fn parse(url: &str, allow_local: bool) -> Result<RepoUrl> {
        if url.is_empty() {
            return Err(refused("it is empty"));
        }
        if url.chars().any(char::is_control) {
            return Err(refused("it holds control characters"));
        }
        let protocol = protocol(url)?;
        if protocol == Protocol::File && !allow_local {
            return Err(refused(format!(
                "a local repository (file:// or a path) is cloned only when the runner's configuration \
                 sets {ALLOW_LOCAL} = true"
            )));
        }
        if protocol != Protocol::File && url.chars().any(char::is_whitespace) {
            return Err(refused("a remote address holds no spaces (write them %20)"));
        }
        Ok(RepoUrl { url: url.to_string(), protocol })
    }

    pub fn as_str(&self) -> &str {
        &self.url
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
}

/// The protocol of an address of an accepted form.
fn protocol(url: &str) -> Result<Protocol> {
    if let Some(rest) = url.strip_prefix("https://") {
        authority(rest).map(|()| Protocol::Https)
    } else if let Some(rest) = url.strip_prefix("ssh://") {
        authority(rest).map(|()| Protocol::Ssh)
    } else if let Some(rest) = url.strip_prefix("file://") {
        if rest.starts_with('/') {
            Ok(Protocol::File)
        } else {
            Err(refused("a file:// URL is file:///PATH, on the runner's machine"))
        }
    } else if url.starts_with('/') {
        Ok(Protocol::File)
    } else if let Some(scheme) = ["http://", "git://"].into_iter().find(|s| url.starts_with(s)) {
        Err(refused(format!(
            "{scheme} is neither encrypted nor authenticated, so anyone on the way could change the \
             code the agent works on; use https:// or ssh://"
        )))
    } else {
        scp_like(url).map(|()| Protocol::Ssh).map_err(|why| refused(format!("{why}; {FORMS}")))
    }
}

/// Checks the `[USER@]HOST[:PORT]` that `rest` (an https:// or ssh://
/// URL after its scheme) starts with: a host, and nothing ssh could take
/// for an option.
fn authority(rest: &str) -> Result<()> {
    let authority = rest.split('/').next().unwrap_or("");
    let (user, host) = authority.rsplit_once('@').unwrap_or(("", authority));
    if host.is_empty() {
        return Err(refused(format!("it names no host; {FORMS}")));
    }
    if user.starts_with('-') || host.starts_with('-') {
        return Err(refused("a host or user starting with '-' would be read as an option"));
    }
    Ok(())
}

/// Whether `url` is `USER@HOST:PATH`, else why not. The user is
/// required: without it, `NAME:REST` reads as a transport of git's
/// (`ext::…`, `fd::…`) or a relative path as easily as a host.
fn scp_like(url: &str) -> std::result::Result<(), &'static str> {
    let Some((user, rest)) = url.split_once('@') else {
        return Err("not an address the runner clones");
    };
    let word = |s: &str| {
        !s.is_empty()
            && !s.starts_with('-')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    if !word(user) {
        return Err("the user of USER@HOST:PATH is letters, digits, '.', '_' and '-', not first '-'");
    }
    let (host, path) = match rest.strip_prefix('[') {
        // An IPv6 address.
        Some(v6) => match v6.split_once("]:") {
            Some((addr, path))
                if !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') =>
            {
                ("v6", path)
            }
            _ => return Err("USER@[ADDRESS]:PATH needs an IPv6 address in the brackets"),
        },
        None => match rest.split_once(':') {
            Some((host, path)) => (host, path),
            None => return Err("USER@HOST:PATH needs the ':' before its path"),
        },
    };
    if !word(host) {
        return Err("the host of USER@HOST:PATH is letters, digits, '.', '_' and '-', not first '-'");
    }
    if path.is_empty() || path.starts_with([':', '-']) {
        return Err("the path of USER@HOST:PATH is not empty and starts with neither ':' nor '-'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(url: &str, local: bool) -> Option<Protocol> {
        RepoUrl::parse(url, local).ok().map(|u| u.protocol())
    }

    fn why(url: &str, local: bool) -> String {
        RepoUrl::parse(url, local).expect_err(url).detail().to_string()
    }

    #[test]
    fn remote_addresses_of_the_three_forms_are_accepted() {
        for (url, protocol) in [
            ("https://github.com/acme/web.git", Protocol::Https),
            ("https://user:secret@git.example.org:8443/acme/web", Protocol::Https),
            ("ssh://git@github.com/acme/web.git", Protocol::Ssh),
            ("ssh://git.example.org:2222/srv/web.git", Protocol::Ssh),
            ("ssh://[::1]/srv/web.git", Protocol::Ssh),
            ("git@github.com:acme/web.git", Protocol::Ssh),
            ("deploy_1@git.example.org:/srv/web.git", Protocol::Ssh),
            ("git@[2001:db8::1]:acme/web.git", Protocol::Ssh),
        ] {
            assert_eq!(accepted(url, false), Some(protocol), "{url}");
            assert_eq!(RepoUrl::parse(url, false).unwrap().as_str(), url);
        }
    }

    #[test]
    fn local_repositories_need_allow_local_repos() {
        for url in ["file:///srv/git/web.git", "/srv/git/web.git", "/tmp/with space/web"] {
            assert!(why(url, false).contains("allow_local_repos = true"), "{url}");
            assert_eq!(accepted(url, true), Some(Protocol::File), "{url}");
        }
        // Relative paths would be the runner's working directory's.
        for url in ["./web", "web", "../web.git", "~/web.git", "file://host/srv/web.git", "file://web"] {
            assert_eq!(accepted(url, true), None, "{url}");
        }
    }

    #[test]
    fn transports_options_and_plain_text_protocols_are_refused() {
        for url in [
            "ext::sh -c touch% /tmp/pwned",
            "ext::sh -c 'id > /tmp/x'",
            "fd::3",
            "git@ext::sh -c id",
            "-u touch /tmp/x",
            "--upload-pack=touch /tmp/x",
            "--config=core.sshCommand=id",
            "ssh://-oProxyCommand=touch%20x/web",
            "ssh://-oProxyCommand=id@host/web",
            "git@-oProxyCommand=id:web",
            "-oProxyCommand=id@host:web",
            "git@host:-u touch x",
            "git@host:",
            "host:acme/web.git",
            "https://",
            "https:///path",
            "HTTPS://github.com/acme/web",
            "https::github.com/acme/web",
            "http://github.com/acme/web.git",
            "git://github.com/acme/web.git",
            "svn://example.org/web",
            "https://example.org/a\nb",
            "https://example.org/a b",
            "",
        ] {
            for local in [false, true] {
                assert_eq!(accepted(url, local), None, "{url:?} with allow_local_repos = {local}");
            }
        }
        assert!(why("http://github.com/acme/web.git", false).contains("http:// is neither encrypted"));
        assert!(why("ext::sh -c id", true).contains("https://HOST/PATH"));
    }
}
