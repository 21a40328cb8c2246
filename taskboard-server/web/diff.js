// Reading a unified diff as `git diff` writes it, and colouring its lines.
// No DOM here beyond the spans of the highlighter: changes.js renders.
//
// A diff is split into its files once (one pass over its lines); a
// file's hunks are read only when the file is shown, so a 2 MB diff
// costs one split until someone opens its files.

// The files of `diff`: [{path, oldPath, deleted, binary, start, end}],
// where start..end are indexes into `lines` (the diff's lines).
export function splitDiff(diff) {
  const lines = diff.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const files = [];
  let cur = null;
  let left = { old: 0, new: 0 }; // lines still due in the current hunk
  const inHunk = () => left.old > 0 || left.new > 0;
  const begin = (i) => {
    if (cur) cur.end = i;
    cur = { path: null, oldPath: null, deleted: false, binary: false, start: i, end: lines.length, sawPlus: false };
    files.push(cur);
    left = { old: 0, new: 0 };
  };
  for (let i = 0; i < lines.length; i += 1) {
    const l = lines[i];
    if (inHunk()) {
      const c = l.charCodeAt(0);
      if (c === 43 /* + */) { left.new -= 1; continue; }
      if (c === 45 /* - */) { left.old -= 1; continue; }
      if (c === 32 /* space */ || l === "") { left.old -= 1; left.new -= 1; continue; }
      if (c === 92 /* \ */) continue;
      left = { old: 0, new: 0 };
    }
    if (l.startsWith("diff --git ")) {
      begin(i);
      const m = /^diff --git a\/(.*) b\/(.*)$/.exec(l);
      if (m) {
        cur.oldPath = m[1];
        cur.path = m[2];
      }
    } else if (l.startsWith("--- ") && (!cur || cur.sawPlus) && (lines[i + 1] || "").startsWith("+++ ")) {
      begin(i); // a diff without `diff --git` lines
    } else if (!cur) {
      continue;
    } else if (l.startsWith("--- ")) {
      const p = l.slice(4);
      if (p !== "/dev/null") cur.oldPath = stripPrefix(p, "a/");
    } else if (l.startsWith("+++ ")) {
      cur.sawPlus = true;
      const p = l.slice(4);
      if (p === "/dev/null") cur.deleted = true;
      else cur.path = stripPrefix(p, "b/");
    } else if (l.startsWith("rename from ")) {
      cur.oldPath = l.slice(12);
    } else if (l.startsWith("rename to ")) {
      cur.path = l.slice(10);
    } else if (l.startsWith("Binary files ") || l === "GIT binary patch") {
      cur.binary = true;
    } else if (l.startsWith("@@ ")) {
      const m = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(l);
      left = m ? { old: m[1] === undefined ? 1 : Number(m[1]), new: m[2] === undefined ? 1 : Number(m[2]) } : { old: 0, new: 0 };
    }
  }
  for (const f of files) {
    if (f.deleted || !f.path) f.path = f.oldPath || f.path || "?";
    delete f.sawPlus;
  }
  return { lines, files };
}

function stripPrefix(p, prefix) {
  return p.startsWith(prefix) ? p.slice(prefix.length) : p;
}

// The rows of one file: {kind: "hunk"|"add"|"del"|"ctx"|"note", old, new, text}.
// Line numbers count from the hunk headers, as the board anchors comments.
export function parseFile(lines, file) {
  const rows = [];
  let old = 0;
  let nu = 0;
  let left = { old: 0, new: 0 };
  let seenHunk = false;
  for (let i = file.start; i < file.end; i += 1) {
    let l = lines[i];
    if (l.endsWith("\r")) l = l.slice(0, -1);
    const inHunk = left.old > 0 || left.new > 0;
    if (!inHunk && l.startsWith("@@ ")) {
      const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/.exec(l);
      if (!m) continue;
      old = Number(m[1]);
      nu = Number(m[3]);
      left = { old: m[2] === undefined ? 1 : Number(m[2]), new: m[4] === undefined ? 1 : Number(m[4]) };
      seenHunk = true;
      rows.push({ kind: "hunk", old: null, new: null, text: l });
      continue;
    }
    if (!seenHunk) continue;
    const c = l.charCodeAt(0);
    if (c === 43) {
      rows.push({ kind: "add", old: null, new: nu, text: l.slice(1) });
      nu += 1;
      left.new -= 1;
    } else if (c === 45) {
      rows.push({ kind: "del", old, new: null, text: l.slice(1) });
      old += 1;
      left.old -= 1;
    } else if (c === 32 || (l === "" && inHunk)) {
      rows.push({ kind: "ctx", old, new: nu, text: l.slice(1) });
      old += 1;
      nu += 1;
      left.old -= 1;
      left.new -= 1;
    } else if (c === 92) {
      rows.push({ kind: "note", old: null, new: null, text: l });
    }
  }
  return rows;
}

// Syntax colours by file extension: keywords, strings, comments and
// numbers, one line at a time (a line inside a block comment that does
// not start with `*` is not known to be one).
const W = (s) => new Set(s.split(" "));
const C_KEYWORDS = "auto break case char const continue default do double else enum extern float for goto if inline int long register return short signed sizeof static struct switch typedef union unsigned void volatile while bool true false NULL nullptr class namespace template typename public private protected virtual override new delete this using try catch throw";
const LANGS = [
  { exts: ["rs"], line: "//", block: true, quotes: "\"", kw: W("as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok Err") },
  { exts: ["js", "mjs", "cjs", "jsx", "ts", "tsx"], line: "//", block: true, quotes: "\"'`", kw: W("async await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof interface let new null of return static super switch this throw true try type typeof undefined var void while with yield") },
  { exts: ["py", "pyi"], line: "#", quotes: "\"'", kw: W("and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return self True try while with yield") },
  { exts: ["go"], line: "//", block: true, quotes: "\"'`", kw: W("break case chan const continue default defer else fallthrough false for func go goto if import interface map nil package range return select struct switch true type var") },
  { exts: ["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "m"], line: "//", block: true, quotes: "\"'", kw: W(C_KEYWORDS) },
  { exts: ["java", "kt", "kts", "scala", "cs", "swift"], line: "//", block: true, quotes: "\"'", kw: W("abstract boolean break byte case catch char class const continue default do double else enum extends final finally float for fun if implements import instanceof int interface long native new null package private protected public return short static super switch synchronized this throw throws try val var void volatile when while true false let func struct") },
  { exts: ["rb"], line: "#", quotes: "\"'", kw: W("alias and begin break case class def defined do else elsif end ensure false for if in module next nil not or redo rescue retry return self super then true undef unless until when while yield") },
  { exts: ["sh", "bash", "zsh"], line: "#", quotes: "\"'", kw: W("case do done elif else esac exit export fi for function if in local return set then until while") },
  { exts: ["toml", "yaml", "yml", "ini", "cfg", "conf"], line: "#", quotes: "\"'", kw: W("true false null yes no on off") },
  { exts: ["json"], quotes: "\"", kw: W("true false null") },
  { exts: ["css", "scss"], block: true, quotes: "\"'", kw: W("important inherit initial none auto") },
  { exts: ["sql"], line: "--", block: true, quotes: "'", kw: W("select from where insert into update delete create table alter drop index and or not null primary key references join left right inner outer on group by order limit as values set begin commit"), anyCase: true },
  { exts: ["html", "htm", "xml", "svg"], quotes: "\"'", tags: true, kw: new Set() },
];
const BY_EXT = new Map();
for (const l of LANGS) {
  const parts = [];
  if (l.tags) parts.push("(?<c><!--.*?(?:-->|$))");
  if (l.line) parts.push(`(?<c2>${l.line.replace(/[/]/g, "\\/")}.*$)`);
  if (l.block) parts.push("(?<c3>\\/\\*.*?(?:\\*\\/|$))");
  if (l.quotes) parts.push(`(?<s>${[...l.quotes].map((q) => `${q}(?:[^${q}\\\\]|\\\\.)*(?:${q}|$)`).join("|")})`);
  if (l.tags) parts.push("(?<k></?[A-Za-z][\\w:.-]*>?|/?>)");
  parts.push("(?<n>\\b(?:0[xX][0-9a-fA-F_]+|\\d[\\d_]*(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)\\w*)");
  parts.push("(?<w>[A-Za-z_$][\\w$]*)");
  l.re = new RegExp(parts.join("|"), "g");
  for (const e of l.exts) BY_EXT.set(e, l);
}

// A function from a line's text to its pieces (strings and spans), or
// null when the file's language is not known.
export function highlighter(path) {
  const name = path.split("/").pop();
  const ext = name.includes(".") ? name.split(".").pop().toLowerCase() : name === "Dockerfile" || name === "Makefile" ? "sh" : "";
  const lang = BY_EXT.get(ext);
  if (!lang) return null;
  return (text) => colour(lang, text);
}

function span(cls, text) {
  const s = document.createElement("span");
  s.className = cls;
  s.textContent = text;
  return s;
}

function colour(lang, text) {
  if (lang.block && /^\s*\*(?:\s|\/|$)/.test(text)) return [span("tk-c", text)];
  const out = [];
  let plain = "";
  let last = 0;
  lang.re.lastIndex = 0;
  for (const m of text.matchAll(lang.re)) {
    plain += text.slice(last, m.index);
    last = m.index + m[0].length;
    const g = m.groups;
    let cls = null;
    if (g.c !== undefined || g.c2 !== undefined || g.c3 !== undefined) cls = "tk-c";
    else if (g.s !== undefined) cls = "tk-s";
    else if (g.k !== undefined) cls = "tk-k";
    else if (g.n !== undefined) cls = "tk-n";
    else if (lang.kw.has(lang.anyCase ? m[0].toLowerCase() : m[0])) cls = "tk-k";
    if (!cls) {
      plain += m[0];
      continue;
    }
    if (plain) out.push(plain);
    plain = "";
    out.push(span(cls, m[0]));
  }
  plain += text.slice(last);
  if (plain) out.push(plain);
  return out;
}
