//! What each bottom crate may build: Cargo holds the layers between
//! crates (a crate can name only what its manifest lists), and these
//! tests hold what each manifest lists, all the way down, so the words on
//! the wire never bring storage or passwords, the store never brings
//! HTTP, and the client and the MCP tools never bring the board.
//!
//! The workspace hack (`taskboard-hack`, docs/decisions.md H.8) is a
//! dependency of every member but the wire's: it names third-party crates
//! with the features the whole workspace asks of them, so every build
//! compiles them alike. It gives no crate anything to name, so it is
//! pruned from the trees read here.

use std::process::Command;

/// The packages `krate` builds, as `cargo tree` lists them (names only,
/// each once); with `prune_hack`, those the workspace hack brings are left
/// out.
pub fn normal_tree(krate: &str, prune_hack: bool) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut args = vec!["tree", "--offline", "-e", "normal", "--prefix", "none", "-p", krate];
    if prune_hack {
        args.extend(["--prune", "taskboard-hack"]);
    }
    let out =
        Command::new(cargo).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("cargo runs");
    assert!(out.status.success(), "cargo tree -p {krate}: {}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::normal_tree;

    fn named<'a>(tree: &'a [String], forbidden: &[&str]) -> Vec<&'a String> {
        tree.iter().filter(|name| forbidden.iter().any(|f| name.contains(f))).collect()
    }

    /// The wire is left out of the hack, so its tree is read whole.
    #[test]
    fn the_wire_builds_no_storage_password_or_http_crate() {
        let tree = normal_tree("taskboard-wire", false);
        assert!(tree.iter().any(|n| n == "serde_json"), "the tree was read: {tree:?}");
        let found = named(
            &tree,
            &["redb", "postgres", "argon2", "password", "hyper", "reqwest", "rustls", "taskboard-hack"],
        );
        assert!(found.is_empty(), "taskboard-wire builds {found:?}");
    }

    #[test]
    fn the_store_builds_no_http_or_password_crate() {
        let tree = normal_tree("taskboard-store", true);
        assert!(tree.iter().any(|n| n == "redb") && tree.iter().any(|n| n == "tokio-postgres"), "{tree:?}");
        let found = named(&tree, &["hyper", "reqwest", "http", "h2", "argon2", "password", "jsonwebtoken"]);
        assert!(found.is_empty(), "taskboard-store builds {found:?}");
    }

    /// What talks to a board from outside it (the typed HTTP client, and
    /// the MCP tools, written against `Perform`) builds on the wire's
    /// declarations, not on the board: no core, store, storage engine or
    /// password hashing in their trees.
    #[test]
    fn the_client_and_the_mcp_crate_build_on_the_wire_alone() {
        for krate in ["taskboard-client", "taskboard-mcp"] {
            let tree = normal_tree(krate, true);
            assert!(tree.iter().any(|n| n == "taskboard-wire"), "{krate}: {tree:?}");
            let found = named(
                &tree,
                &[
                    "taskboard-core",
                    "taskboard-store",
                    "redb",
                    "postgres",
                    "argon2",
                    "password",
                    "jsonwebtoken",
                ],
            );
            assert!(found.is_empty(), "{krate} builds {found:?}");
        }
    }
}
