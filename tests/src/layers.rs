//! The shape of the workspace's crates: within a crate, the files' imports
//! point one way. A file that uses another (a `use crate::…`, `use
//! super::…` or `use child::…` line, or an inline `crate::a::B` path)
//! depends on the file that defines what it names; an import circle is a
//! set of files that depend on each other through such lines. A `pub use`
//! re-export is a door, not a dependency: a path through it is followed
//! to the file behind it. Code under `#[cfg(test)] mod tests` is left out.
//!
//! [`circles`] reads a crate's `src/` and returns its circles; the
//! workspace's test fails on any (docs/decisions.md, the house).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The import circles among the files under `src`, each as its modules'
/// paths (`api::tasks`, `board`, … the crate root is ``), sorted, with
/// one edge per pair that makes it (`from -> to: path`).
pub fn circles(src: &Path) -> std::io::Result<Vec<Circle>> {
    let files = read_tree(src)?;
    let graph = Graph::of(&files);
    Ok(graph.circles())
}

/// The import circles among the folders of `src`: each top-level module
/// (`api`, `board`, `wire`, a file like `runs.rs`) counts as one, whatever
/// its files import of each other inside it; an edge between two is
/// named by one of the file-level edges that make it.
pub fn folder_circles(src: &Path) -> std::io::Result<Vec<Circle>> {
    let files = read_tree(src)?;
    Ok(Graph::of(&files).folders().circles())
}

/// One import circle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    pub modules: Vec<String>,
    /// `from -> to: the path that makes the edge`, for each edge inside.
    pub edges: Vec<String>,
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "circle of {}: {}", self.modules.len(), self.modules.join(", "))?;
        for e in &self.edges {
            writeln!(f, "    {e}")?;
        }
        Ok(())
    }
}

/// Module path (`a::b`) → the file's source, comments and tests removed.
fn read_tree(src: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src").with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            out.insert(parts.join("::"), strip(&std::fs::read_to_string(&path)?));
        }
    }
    Ok(out)
}

/// The source without comments, string literals' contents and the
/// `#[cfg(test)] mod tests { … }` block.
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if text[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            i = text[i..].find("*/").map_or(b.len(), |e| i + e + 2);
        } else if let Some(len) = raw_string(&text[i..]) {
            i += len;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A character literal (`'"'`, `'\''`) is skipped; a lifetime kept.
            if b.get(i + 1) == Some(&b'\\') {
                i = text[i + 3..].find('\'').map_or(b.len(), |e| i + 3 + e + 1);
            } else if text[i + 1..].chars().nth(1) == Some('\'') {
                i += 2 + text[i + 1..].chars().next().map_or(0, char::len_utf8);
            } else {
                out.push('\'');
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if text[i..].starts_with("#[cfg(test)]") && is_test_module(&text[i + 12..]) {
            // Skip to the end of the module's braces.
            let open = i + text[i..].find('{').expect("checked by is_test_module");
            let mut depth = 0;
            i = open;
            while i < b.len() {
                match b[i] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i += 1;
        } else {
            let ch = text[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The length of the raw string literal (`r"…"`, `r#"…"#`, `br#"…"#`)
/// at the start of `text`, if one starts there.
fn raw_string(text: &str) -> Option<usize> {
    let after_b = text.strip_prefix('b').unwrap_or(text);
    let after_r = after_b.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(text.len() - body.len() + end + close.len())
}

fn is_test_module(after: &str) -> bool {
    let rest = after.trim_start();
    let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
    rest.strip_prefix("mod ").is_some_and(|r| {
        let name_end = r.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(r.len());
        r[name_end..].trim_start().starts_with('{')
    })
}

/// The `use` statements of a source: (is a `pub` re-export, the tree,
/// the statement's byte range).
fn use_statements(text: &str) -> Vec<(bool, String, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let is_pub = before.ends_with("pub")
            || (before.ends_with(')') && before.contains("pub(") && {
                let open = before.rfind("pub(").expect("checked");
                !before[open..].contains(';') && !before[open..].contains('{')
            });
        let body_start = at + 3;
        let Some(end) = rest[body_start..].find(';') else { break };
        let tree = rest[body_start..body_start + end].trim().to_string();
        out.push((is_pub, tree, offset + at..offset + body_start + end + 1));
        offset += body_start + end + 1;
        rest = &rest[body_start + end + 1..];
    }
    out
}

/// The byte offset of `word` standing alone (not part of a longer name).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if !ident(before) && !ident(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (aliases dropped).
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or("").trim().to_string()];
    };
    let prefix = tree[..open].trim();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    items.push(current);
    items
        .iter()
        .map(|i| i.trim())
        .filter(|i| !i.is_empty())
        .flat_map(|i| expand(i).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// Inline paths starting with `crate::` or `super::`.
fn inline_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            if text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let end = text[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(text.len(), |e| at + e);
            out.push(text[at..end].trim_end_matches(':').to_string());
        }
    }
    out
}

struct Graph {
    modules: BTreeSet<String>,
    /// (module, name) → the absolute path a `pub use` in it leads to.
    doors: BTreeMap<(String, String), String>,
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn of(files: &BTreeMap<String, String>) -> Graph {
        let mut g = Graph {
            modules: files.keys().cloned().collect(),
            doors: BTreeMap::new(),
            edges: BTreeMap::new(),
        };
        for (module, text) in files {
            for (is_pub, tree, _) in use_statements(text) {
                if !is_pub {
                    continue;
                }
                for path in expand(&tree) {
                    let Some(abs) = g.absolute(module, &path) else { continue };
                    let name = path.rsplit("::").next().unwrap_or("").to_string();
                    if name != "*" && name != "self" {
                        g.doors.insert((module.clone(), name), abs);
                    }
                }
            }
        }
        for (module, text) in files {
            let mut paths: Vec<String> = Vec::new();
            // Inline paths are read outside the `use` lines.
            let mut body = String::with_capacity(text.len());
            let mut from = 0;
            for (is_pub, tree, range) in use_statements(text) {
                if !is_pub {
                    paths.extend(expand(&tree));
                }
                body.push_str(&text[from..range.start]);
                from = range.end;
            }
            body.push_str(&text[from..]);
            paths.extend(inline_paths(&body));
            for path in paths {
                let path = path.trim_end_matches("::*").trim_end_matches("::self").to_string();
                let Some(abs) = g.absolute(module, &path) else { continue };
                let target = g.resolve(&abs, 0);
                if target != *module && !target.is_empty() {
                    g.edges.entry(module.clone()).or_default().entry(target).or_insert(path);
                }
            }
        }
        g
    }

    /// A path written in `module` as an absolute module path, or `None`
    /// for one outside the crate.
    fn absolute(&self, module: &str, path: &str) -> Option<String> {
        let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<&str> = if module.is_empty() { Vec::new() } else { module.split("::").collect() };
        let first = *segs.first()?;
        let rest = match first {
            "crate" => {
                base.clear();
                &segs[1..]
            }
            "self" => &segs[1..],
            "super" => {
                let supers = segs.iter().take_while(|s| **s == "super").count();
                base.truncate(base.len().saturating_sub(supers));
                &segs[supers..]
            }
            _ => {
                let mut child = base.clone();
                child.push(first);
                if !self.modules.contains(&child.join("::")) {
                    return None;
                }
                &segs[..]
            }
        };
        base.extend_from_slice(rest);
        Some(base.join("::"))
    }

    /// The module that defines what `path` names, through doors.
    fn resolve(&self, path: &str, depth: usize) -> String {
        let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        for n in (0..=segs.len()).rev() {
            let module = segs[..n].join("::");
            if !self.modules.contains(&module) {
                continue;
            }
            if let Some(name) = segs.get(n)
                && let Some(door) = self.doors.get(&(module.clone(), name.to_string()))
                && depth < 16
            {
                let mut through = door.clone();
                for s in &segs[n + 1..] {
                    through.push_str("::");
                    through.push_str(s);
                }
                return self.resolve(&through, depth + 1);
            }
            return module;
        }
        String::new()
    }

    /// The graph of the top-level modules: an edge between two wherever
    /// a file of one depends on a file of the other.
    fn folders(&self) -> Graph {
        let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
        let mut g = Graph {
            modules: self.modules.iter().map(|m| top(m)).filter(|m| !m.is_empty()).collect(),
            doors: BTreeMap::new(),
            edges: BTreeMap::new(),
        };
        for (from, to_why) in &self.edges {
            for (to, why) in to_why {
                let (a, b) = (top(from), top(to));
                if a != b && !a.is_empty() && !b.is_empty() {
                    g.edges
                        .entry(a)
                        .or_default()
                        .entry(b)
                        .or_insert_with(|| format!("{from} -> {to} ({why})"));
                }
            }
        }
        g
    }

    /// Strongly connected components of more than one module (Tarjan).
    fn circles(&self) -> Vec<Circle> {
        struct State<'a> {
            g: &'a Graph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<Vec<&'a str>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in s.g.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    s.found.push(component);
                }
            }
        }
        let mut s = State {
            g: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for m in &self.modules {
            if !s.index.contains_key(m.as_str()) {
                visit(&mut s, m);
            }
        }
        s.found
            .into_iter()
            .map(|c| {
                let members: BTreeSet<&str> = c.iter().copied().collect();
                let edges = members
                    .iter()
                    .flat_map(|from| {
                        self.edges[*from]
                            .iter()
                            .filter(|(to, _)| members.contains(to.as_str()))
                            .map(move |(to, why)| format!("{from} -> {to}: {why}"))
                    })
                    .collect();
                Circle { modules: members.iter().map(|m| m.to_string()).collect(), edges }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The source folder of every crate at the workspace's top, so a new
    /// crate is guarded without being named here.
    fn crates() -> Vec<(String, std::path::PathBuf)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut found: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|dir| dir.join("Cargo.toml").is_file() && dir.join("src").is_dir())
            .map(|dir| (dir.file_name().unwrap().to_string_lossy().into_owned(), dir.join("src")))
            .collect();
        found.sort();
        assert!(found.len() >= 7, "the workspace's crates: {found:?}");
        found
    }

    /// No two folders of a crate import each other: the order the core
    /// is to be cut into crates along (docs/decisions.md, the house).
    #[test]
    fn the_workspace_crates_have_no_import_circle_between_folders() {
        let mut report = String::new();
        for (krate, src) in crates() {
            for c in folder_circles(&src).unwrap() {
                report.push_str(&format!("{krate}: {c}"));
            }
        }
        assert!(
            report.is_empty(),
            "import circles between folders (see docs/decisions.md, the house):\n{report}"
        );
    }

    #[test]
    fn a_circle_between_folders_is_found_though_each_file_imports_one_way() {
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod one;\nmod two;\n"),
            ("a/one.rs", "pub struct One;\n"),
            ("a/two.rs", "use crate::b::B;\npub struct Two;\n"),
            ("b.rs", "use crate::a::one::One;\npub struct B;\n"),
        ]);
        assert!(circles(dir.path()).unwrap().is_empty(), "no circle of files");
        let found = folder_circles(dir.path()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["a", "b"]);
        assert_eq!(
            found[0].edges,
            ["a -> b: a::two -> b (crate::b::B)", "b -> a: b -> a::one (crate::a::one::One)"]
        );
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn the_workspace_crates_have_no_import_circle() {
        let mut report = String::new();
        for (krate, src) in crates() {
            for c in circles(&src).unwrap() {
                report.push_str(&format!("{krate}: {c}"));
            }
        }
        assert!(report.is_empty(), "import circles (see docs/decisions.md, the house):\n{report}");
    }

    #[test]
    fn a_circle_through_a_parent_and_its_child_is_found_with_its_edges() {
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod inner;\nuse crate::b::B; // a comment naming crate::c\npub struct A;\n"),
            ("a/inner.rs", "pub struct Inner;\n"),
            ("b.rs", "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n"),
        ]);
        let found = circles(dir.path()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["a", "b"]);
        assert_eq!(found[0].edges, ["a -> b: crate::b::B", "b -> a: crate::a::A"]);
    }

    #[test]
    fn a_re_export_is_followed_to_the_file_that_defines_the_name() {
        // `b` uses `crate::a::Inner`, which `a` only re-exports from
        // `a::inner`: `b` depends on `a::inner`, and `a`'s use of `b` makes
        // no circle.
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod inner;\npub use inner::{Inner, other::*};\nuse crate::b::B;\n"),
            ("a/inner.rs", "pub struct Inner;\n"),
            ("b.rs", "use crate::a::Inner;\npub struct B(Inner);\n"),
        ]);
        assert_eq!(circles(dir.path()).unwrap(), []);
        // Through the child itself it is a circle of three.
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod inner;\npub use inner::Inner;\nuse crate::b::B;\n"),
            ("a/inner.rs", "pub struct Inner;\nfn f(_: super::A) {}\n"),
            ("b.rs", "use crate::a::Inner;\npub struct B(Inner);\n"),
        ]);
        let found = circles(dir.path()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["a", "a::inner", "b"]);
    }

    #[test]
    fn test_modules_and_strings_make_no_edges() {
        let dir = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n    fn f() { {} }\n}\n",
            ),
            ("b.rs", "use crate::a::A;\nconst S: &str = \"crate::a::A and \\\" crate::b\";\n"),
        ]);
        assert_eq!(circles(dir.path()).unwrap(), []);
    }
}
