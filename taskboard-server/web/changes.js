// The Changes tab of a task's panel: where its review stands, the files
// of its branch with their counts, the unified diff with line numbers and
// colours, line comments in place, a review (Approve / Request changes /
// Comment), Merge and Discard.
//
// What it shows comes from reads and events only: a new head in
// `task.updated` reads the changes and reviews again (a new round
// replaces the diff), `review.created` adds a review, run events show
// the round or landing under way. A write changes nothing on the page
// until the server answers; its effects arrive as events.
//
// From round 2 on, a person can look at one round's own commits (what the
// agent changed answering a review: `GET /runs/{id}/changes`) instead of
// the whole change; that view is for reading, and line comments stay on
// the whole change, whose lines they anchor to.
//
// A diff may weigh 2 MB over thousands of files: the files are listed at
// once, but only the first OPEN_FILES files, up to OPEN_LINES lines, are
// unfolded, and their rows are added in slices of SLICE_MS so the page
// answers between them. The rest unfold on a click.

import * as api from "./api.js";
import { state, onEvent, isOpenRun } from "./store.js";
import { h, replace, select, timeAgo } from "./dom.js";
import { markdown } from "./markdown.js";
import { icon } from "./icons.js";
import { splitDiff, parseFile, highlighter } from "./diff.js";
import { runState, runWork, changeCounts } from "./runs.js";

export const OPEN_FILES = 25;
export const OPEN_LINES = 1500;
// A file longer than this stays folded even among the first.
export const BIG_FILE_LINES = 800;
// Rows are added for at most this long before the page gets a turn.
const SLICE_MS = 10;
const ROWS_PER_CHECK = 100;

const STATE_WORDS = { none: "no changes", pending: "awaiting review", changes_requested: "changes requested", approved: "approved" };
const VERDICT_WORDS = { approve: "approved", request_changes: "requested changes", comment: "commented" };
const VERDICTS = [["approve", "Approve"], ["request_changes", "Request changes"], ["comment", "Comment"]];
const METHODS = [["merge", "merge commit"], ["squash", "squash"], ["rebase", "rebase"]];
const short = (c) => (c || "").slice(0, 10);
const anchorOf = (side, line) => `${side}:${line}`;
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export function changesTab(taskId) {
  const task = () => state.tasks.get(taskId);
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };

  // Where the review stands, the branch, the run under way or the last landing.
  const summary = h("p", { class: "review-summary" });
  const branch = h("p", { class: "branch-line" });
  const runLine = h("p", { class: "run-line" });

  // Merge (with its method) and Discard (after a confirmation).
  const method = select(METHODS, "merge", { "aria-label": "Merge method", class: "merge-method" });
  const mergeButton = h("button", { type: "button", class: "merge" }, icon("branch"), " Merge");
  const discardButton = h("button", { type: "button", class: "discard" }, "Discard…");
  const confirm = h("span", { class: "row confirm-discard", hidden: true });
  const actions = h("div", { class: "row changes-actions", hidden: true }, method, mergeButton, h("span", { class: "spacer" }), discardButton, confirm);
  const send = async (button, path, body) => {
    error.textContent = "";
    button.disabled = true;
    try {
      await api.post(path, body);
    } catch (e) {
      report(e);
    } finally {
      button.disabled = false;
    }
  };
  mergeButton.addEventListener("click", () => send(mergeButton, `/tasks/${taskId}/merge`, { method: method.value }));
  discardButton.addEventListener("click", () => {
    const yes = h("button", { type: "button", class: "danger confirm" }, "Discard the branch");
    yes.addEventListener("click", async () => {
      await send(yes, `/tasks/${taskId}/discard`);
      confirm.hidden = true;
    });
    replace(confirm, h("span", null, "Delete the branch and give the task back?"), yes,
      h("button", { type: "button", class: "link", onclick: () => { confirm.hidden = true; } }, "Cancel"));
    confirm.hidden = false;
    yes.focus();
  });

  const reviewsList = h("ol", { class: "reviews", "aria-label": "Reviews" });
  const fileList = h("ul", { class: "changed-files", "aria-label": "Changed files" });
  const note = h("p", { class: "muted diff-note" });
  const diffs = h("div", { class: "diff-files", "aria-describedby": "diff-help" });
  const content = h("div", { class: "changes-content" });

  // The review being written: its body, its pending line comments, and the
  // one line comment box open.
  let pending = []; // {id, path, side, line, body}
  let pendingSeq = 0;
  let composer = null; // {path, side, line, el, area}
  const reviewBody = h("textarea", { rows: 1, "aria-label": "Review", placeholder: "Your review: what you say of the whole change…", maxlength: 65536 });
  const pendingList = h("ul", { class: "pending-comments", "aria-label": "Pending comments" });
  const reviewError = h("p", { class: "error", role: "alert" });
  const verdictButtons = VERDICTS.map(([verdict, label]) =>
    h("button", { type: "button", class: `verdict ${verdict}`, dataset: { verdict } }, label));
  const reviewBox = h("form", { class: "review-box", "aria-label": "Your review", hidden: true },
    pendingList, reviewError, h("div", { class: "row" }, reviewBody, verdictButtons));
  reviewBox.addEventListener("submit", (e) => e.preventDefault());
  verdictButtons.forEach((b) => b.addEventListener("click", () => submitReview(b.dataset.verdict)));

  async function submitReview(verdict) {
    reviewError.textContent = "";
    error.textContent = "";
    const sent = pending.slice();
    const body = { verdict, body: reviewBody.value.trim(), comments: sent.map(({ path, line, side, body: text }) => ({ path, line, side, body: text })) };
    for (const b of verdictButtons) b.disabled = true;
    try {
      await api.post(`/tasks/${taskId}/reviews`, body);
      // The server has it: the review itself arrives as `review.created`.
      const ids = new Set(sent.map((p) => p.id));
      pending = pending.filter((p) => !ids.has(p.id));
      reviewBody.value = "";
      renderComments();
    } catch (e) {
      reviewError.textContent = e.message;
    } finally {
      for (const b of verdictButtons) b.disabled = false;
    }
  }

  const el = h("div", { class: "changes", "aria-live": "off" },
    h("div", { class: "changes-head" }, summary, branch, runLine),
    actions, error,
    h("p", { id: "diff-help", class: "sr-only" }, "Activate a line number to comment on that line."),
    content, reviewBox);

  // What was read: the task's changes (null: none recorded), the rounds
  // (work runs that recorded changes, oldest first) and the reviews.
  // `changes` is what the tab shows: the task's, or a round's own.
  let whole = null;
  let changes = null;
  let rounds = [];
  let roundView = null; // the run whose own changes are shown, or null
  const roundChanges = new Map(); // run id → its changes, once read
  let loadedHead; // undefined until read; null when there are none
  let failedHead;
  let loading = false;
  let closed = false;
  let reviews = new Map(); // id → review
  let late = []; // reviews whose event came while a read was under way

  // The files shown: {path, oldPath, status, additions, deletions, chunk,
  // rows, anchors, open, section, body, tbody, next, lineRows, threadRows}.
  let split = null;
  let files = [];
  let byPath = new Map();
  let queue = [];
  let pumping = false;
  let started = 0;

  async function load() {
    const t = task();
    const want = t && t.changes ? t.changes.head_commit : null;
    loading = true;
    late = [];
    try {
      const [c, list, runs] = await Promise.all([
        api.get(`/tasks/${taskId}/changes`).catch((e) => {
          if (e.status === 404) return null;
          throw e;
        }),
        api.get(`/tasks/${taskId}/reviews`),
        api.get("/runs", { task_id: taskId, limit: 200 }),
      ]);
      if (closed) return;
      whole = c;
      changes = c;
      roundView = null;
      rounds = (Array.isArray(runs) ? runs : runs.items || [])
        .filter((r) => r.purpose === "work" && r.changes)
        .sort((a, b) => a.created_at.localeCompare(b.created_at));
      loadedHead = c ? c.head_commit : null;
      reviews = new Map(list.map((r) => [r.id, r]));
      for (const r of late) reviews.set(r.id, r);
      renderAll();
    } catch (e) {
      failedHead = want;
      report(e);
    } finally {
      loading = false;
      late = [];
    }
    if (!closed) sync();
  }

  // Reads again when the task's head is not the one shown.
  function sync() {
    const t = task();
    if (!t || loading) return;
    const want = t.changes ? t.changes.head_commit : null;
    if (want === loadedHead || want === failedHead) return;
    failedHead = undefined;
    load();
  }

  function renderAll() {
    started = performance.now();
    queue = [];
    files = [];
    byPath = new Map();
    if (!changes) {
      composer = null;
      split = null;
      replace(content,
        h("section", { "aria-label": "Reviews" }, h("h3", null, "Reviews"), reviewsList),
        h("p", { class: "muted no-changes" }, "No changes recorded: an agent's run records its branch here when it ends."));
      renderComments();
      el.dataset.head = "";
      return;
    }
    split = splitDiff(changes.diff);
    const chunks = new Map();
    for (const c of split.files) {
      if (!chunks.has(c.path)) chunks.set(c.path, c);
      if (c.oldPath && !chunks.has(c.oldPath)) chunks.set(c.oldPath, c);
    }
    const used = new Set();
    const fileOf = (f, chunk) => ({
      path: f.path, oldPath: f.old_path || null, status: f.status, additions: f.additions, deletions: f.deletions,
      chunk, rows: null, anchors: null, open: false, section: null, body: null, tbody: null, next: 0,
      lineRows: new Map(), threadRows: new Map(), colour: undefined,
    });
    for (const f of changes.files) {
      const chunk = chunks.get(f.path) || (f.old_path && chunks.get(f.old_path)) || null;
      if (chunk) used.add(chunk);
      files.push(fileOf(f, chunk));
    }
    for (const c of split.files) {
      if (used.has(c)) continue;
      files.push(fileOf({ path: c.path, old_path: c.oldPath !== c.path ? c.oldPath : null, status: c.deleted ? "deleted" : "modified", additions: 0, deletions: 0 }, c));
    }
    for (const f of files) byPath.set(f.path, f);
    if (composer && !hasLine(composer.path, composer.side, composer.line)) composer = null;
    let lines = OPEN_LINES;
    let opened = 0;
    for (const f of files) {
      const n = f.chunk ? f.chunk.end - f.chunk.start : 0;
      if (!showable(f) || n > BIG_FILE_LINES) continue;
      if (opened >= OPEN_FILES || n > lines) {
        lines = 0;
        continue;
      }
      f.open = true;
      opened += 1;
      lines -= n;
    }
    note.textContent = changes.truncated
      ? `The diff was cut at its cap: every file is listed, but the last ones have no lines here (git diff ${short(changes.base_commit)}..${short(changes.head_commit)} shows them).`
      : "";
    if (roundView) {
      note.textContent = `Round ${roundView.round}'s own commits (${short(changes.base_commit)}..${short(changes.head_commit)}), to read: `
        + "line comments are on the whole change." + (changes.truncated ? " The diff was cut at its cap." : "");
    }
    replace(fileList, files.map(fileItem));
    replace(diffs, files.map(fileSection));
    replace(content,
      h("section", { "aria-label": "Reviews" }, h("h3", null, "Reviews"), reviewsList),
      h("section", { "aria-label": "Files" }, h("h3", null, `Files (${files.length})`), viewChoice(), note, fileList),
      diffs);
    el.dataset.head = whole.head_commit;
    el.dataset.view = roundView ? `round-${roundView.round}` : "whole";
    el.dataset.settled = "false";
    renderComments();
    pump();
    el.dataset.renderMs = (performance.now() - started).toFixed(1);
  }

  // Whole change or one round's own commits, once there are two rounds.
  function viewChoice() {
    if (rounds.length < 2) return null;
    const options = [["", "The whole change"], ...rounds.map((r) => [r.id,
      `Round ${r.round} only: ${short(r.changes.head_commit)} · +${r.changes.additions} −${r.changes.deletions}`])];
    const choice = select(options, roundView ? roundView.id : "", { "aria-label": "Show", class: "view-choice" });
    choice.addEventListener("change", () => showRound(choice.value, choice));
    return h("p", { class: "row view-row" }, h("span", { class: "muted" }, "Show "), choice);
  }

  async function showRound(id, choice) {
    error.textContent = "";
    const run = rounds.find((r) => r.id === id) || null;
    if (!run) {
      roundView = null;
      changes = whole;
      renderAll();
      return;
    }
    choice.disabled = true;
    try {
      if (!roundChanges.has(id)) roundChanges.set(id, await api.get(`/runs/${id}/changes`));
      if (closed || !rounds.includes(run)) return;
      roundView = run;
      changes = roundChanges.get(id);
      composer = null;
      renderAll();
    } catch (e) {
      report(e);
      choice.value = roundView ? roundView.id : "";
    } finally {
      choice.disabled = false;
    }
  }

  const showable = (f) => f.chunk && !f.chunk.binary && f.status !== "binary";
  const pathText = (f) => (f.oldPath && f.oldPath !== f.path ? `${f.oldPath} → ${f.path}` : f.path);
  const statusChip = (f) => h("span", { class: "file-status", dataset: { status: f.status } }, f.status);

  function fileItem(f) {
    return h("li", { dataset: { path: f.path, status: f.status } },
      h("button", { type: "button", class: "link file-link", onclick: () => reveal(f) }, pathText(f)), " ",
      statusChip(f), " ", counts(f));
  }
  const counts = (f) => (f.additions || f.deletions || f.status !== "binary" ? changeCounts(f) : null);

  function reveal(f) {
    if (!f.open && showable(f)) unfold(f);
    f.section.scrollIntoView({ block: "start" });
  }

  function fileSection(f) {
    const toggle = h("button", { type: "button", class: "link file-toggle", "aria-expanded": String(f.open),
      "aria-label": `${f.open ? "Fold" : "Unfold"} ${f.path}`, disabled: !showable(f) }, icon(f.open ? "down" : "right"));
    toggle.addEventListener("click", () => (f.open ? fold(f) : unfold(f)));
    f.toggle = toggle;
    f.count = h("span", { class: "comment-count muted" });
    f.body = h("div", { class: "diff-file-body" });
    f.section = h("section", { class: "diff-file", dataset: { path: f.path, status: f.status }, "aria-label": f.path },
      h("div", { class: "diff-file-head" }, toggle, statusChip(f), h("span", { class: "path" }, pathText(f)), counts(f), f.count),
      f.body);
    fillBody(f);
    return f.section;
  }

  function fillBody(f) {
    f.tbody = null;
    f.lineRows = new Map();
    f.threadRows = new Map();
    f.section.dataset.open = String(f.open);
    f.toggle.setAttribute("aria-expanded", String(f.open));
    f.toggle.setAttribute("aria-label", `${f.open ? "Fold" : "Unfold"} ${f.path}`);
    replace(f.toggle, icon(f.open ? "down" : "right"));
    if (f.status === "binary" || (f.chunk && f.chunk.binary)) {
      replace(f.body, h("p", { class: "muted file-note" }, "A binary file: listed, not shown."));
    } else if (!f.chunk) {
      replace(f.body, h("p", { class: "muted file-note" }, changes.truncated ? "Not in the diff: it was cut before this file." : "No lines to show."));
    } else if (!f.open) {
      const n = f.chunk.end - f.chunk.start;
      replace(f.body, h("button", { type: "button", class: "link show-diff", onclick: () => unfold(f) }, `Show the diff (${plural(n, "line", "lines")})`));
    } else {
      if (!f.rows) parse(f);
      f.next = 0;
      f.tbody = h("tbody");
      replace(f.body, h("table", { class: "diff" },
        h("colgroup", null, h("col", { class: "ln-col" }), h("col", { class: "ln-col" }), h("col")), f.tbody));
      if (!queue.includes(f)) queue.push(f);
    }
  }

  function parse(f) {
    f.rows = parseFile(split.lines, f.chunk);
    f.anchors = new Set();
    for (const r of f.rows) {
      if (r.old !== null) f.anchors.add(anchorOf("old", r.old));
      if (r.new !== null) f.anchors.add(anchorOf("new", r.new));
    }
    if (f.colour === undefined) f.colour = highlighter(f.path);
  }

  function unfold(f) {
    if (f.open || !showable(f)) return;
    f.open = true;
    fillBody(f);
    schedule();
  }

  function fold(f) {
    f.open = false;
    queue = queue.filter((x) => x !== f);
    fillBody(f);
  }

  function schedule() {
    if (pumping || !queue.length) return;
    pumping = true;
    setTimeout(() => {
      pumping = false;
      pump();
    }, 0);
  }

  // Adds rows of the unfolded files for SLICE_MS, then yields to the page.
  function pump() {
    if (closed) return;
    const until = performance.now() + SLICE_MS;
    while (queue.length && performance.now() < until) {
      const f = queue[0];
      if (!f.tbody) {
        queue.shift();
        continue;
      }
      const frag = document.createDocumentFragment();
      const end = Math.min(f.rows.length, f.next + ROWS_PER_CHECK);
      for (; f.next < end; f.next += 1) addRow(f, frag, f.rows[f.next]);
      f.tbody.append(frag);
      if (f.next >= f.rows.length) {
        queue.shift();
        f.section.dataset.rendered = "true";
      }
    }
    if (queue.length) schedule();
    else if (el.dataset.settled === "false") {
      el.dataset.settled = "true";
      el.dataset.settledMs = (performance.now() - started).toFixed(1);
    }
  }

  function lineCell(f, side, n) {
    const td = document.createElement("td");
    td.className = `ln ${side}`;
    if (n === null) return td;
    if (f.chunk.deleted || roundView) {
      td.textContent = String(n);
      return td;
    }
    const b = document.createElement("button");
    b.type = "button";
    b.className = "ln-btn";
    b.dataset.side = side;
    b.dataset.line = String(n);
    b.textContent = String(n);
    td.append(b);
    return td;
  }

  function addRow(f, frag, r) {
    const tr = document.createElement("tr");
    tr.className = r.kind;
    if (r.kind === "hunk" || r.kind === "note") {
      const td = document.createElement("td");
      td.colSpan = 3;
      td.className = "hunk-head";
      td.textContent = r.text;
      tr.append(td);
      frag.append(tr);
      return;
    }
    const code = document.createElement("td");
    code.className = "code";
    const sign = document.createElement("span");
    sign.className = "sign";
    sign.textContent = r.kind === "add" ? "+" : r.kind === "del" ? "-" : " ";
    code.append(sign);
    if (f.colour) code.append(...f.colour(r.text));
    else code.append(r.text);
    tr.append(lineCell(f, "old", r.old), lineCell(f, "new", r.new), code);
    frag.append(tr);
    for (const [side, n] of [["old", r.old], ["new", r.new]]) {
      if (n === null) continue;
      const key = anchorOf(side, n);
      f.lineRows.set(key, tr);
      const t = threads.get(f.path);
      const thread = t && t.get(key);
      if (thread) {
        const row = threadRow(f, key, thread);
        f.threadRows.set(key, { sig: thread.sig, tr: row });
        frag.append(row);
      }
    }
  }

  // A click on a line number opens a comment box under that line.
  diffs.addEventListener("click", (e) => {
    const b = e.target.closest(".ln-btn");
    if (!b) return;
    const f = byPath.get(b.closest(".diff-file").dataset.path);
    if (f) openComposer(f, b.dataset.side, Number(b.dataset.line));
  });

  function openComposer(f, side, line) {
    if (composer && composer.path === f.path && composer.side === side && composer.line === line) {
      composer.area.focus();
      return;
    }
    const area = h("textarea", { rows: 3, maxlength: 65536, "aria-label": `Comment on line ${line} (${side}) of ${f.path}` });
    const cancel = () => {
      composer = null;
      renderComments();
    };
    area.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.stopPropagation();
        cancel();
      }
    });
    const form = h("form", { class: "line-composer" }, area,
      h("div", { class: "row" }, h("button", { type: "submit" }, "Add to review"), h("button", { type: "button", class: "link", onclick: cancel }, "Cancel")));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const body = area.value.trim();
      if (!body) return;
      pendingSeq += 1;
      pending.push({ id: pendingSeq, path: f.path, side, line, body });
      composer = null;
      renderComments();
    });
    composer = { path: f.path, side, line, el: form, area };
    renderComments();
    area.focus();
  }

  // The line comments by file and line: reviews' comments (outdated ones
  // only where their line still is), pending ones, the open box.
  let threads = new Map(); // path → Map(anchor → {comments, pending, composer, sig})
  const hasLine = (path, side, line) => {
    const f = byPath.get(path);
    if (!f || !showable(f)) return false;
    if (!f.rows) parse(f);
    return f.anchors.has(anchorOf(side, line));
  };
  function thread(path, key) {
    if (!threads.has(path)) threads.set(path, new Map());
    const m = threads.get(path);
    if (!m.has(key)) m.set(key, { comments: [], pending: [], composer: false, sig: "" });
    return m.get(key);
  }
  function placeComments() {
    threads = new Map();
    const elsewhere = new Map(); // review id → comments not in place
    const ordered = [...reviews.values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
    for (const r of ordered) {
      r.comments.forEach((c, i) => {
        if (changes && !roundView && hasLine(c.path, c.side, c.line)) thread(c.path, anchorOf(c.side, c.line)).comments.push({ review: r, c, i });
        else {
          if (!elsewhere.has(r.id)) elsewhere.set(r.id, []);
          elsewhere.get(r.id).push(c);
        }
      });
    }
    for (const p of pending) if (!roundView && byPath.has(p.path)) thread(p.path, anchorOf(p.side, p.line)).pending.push(p);
    if (composer) thread(composer.path, anchorOf(composer.side, composer.line)).composer = true;
    for (const m of threads.values()) for (const t of m.values()) {
      t.sig = JSON.stringify([t.comments.map(({ review, i, c }) => [review.id, i, c.outdated]), t.pending.map((p) => p.id), t.composer && composer.area.getAttribute("aria-label")]);
    }
    return { ordered, elsewhere };
  }

  function comment(review, c) {
    const who = `@${review.author.slug}`;
    const head = h("header", null, h("strong", null, who), " ",
      h("span", { class: "muted" }, `${VERDICT_WORDS[review.verdict] || review.verdict} · round ${review.round} · `),
      h("time", { class: "muted", datetime: review.created_at }, timeAgo(review.created_at)));
    if (c.outdated) {
      return h("details", { class: "comment outdated", dataset: { reviewId: review.id } },
        h("summary", null, h("span", { class: "outdated-mark" }, "outdated"), ` ${who} on `, h("code", null, c.text)),
        head, markdown(c.body));
    }
    return h("div", { class: "comment", dataset: { reviewId: review.id } }, head, markdown(c.body));
  }

  function threadRow(f, key, t) {
    const [side, line] = key.split(":");
    const items = [
      ...t.comments.map(({ review, c }) => comment(review, c)),
      ...t.pending.map((p) => h("div", { class: "comment pending", dataset: { pendingId: String(p.id) } },
        h("header", null, h("span", { class: "pending-mark" }, "pending"), " your comment ",
          h("button", { type: "button", class: "link remove-pending", onclick: () => removePending(p.id) }, "Remove")),
        markdown(p.body))),
      t.composer ? composer.el : null,
    ];
    return h("tr", { class: "thread", dataset: { side, line } }, h("td", { colspan: 3 }, h("div", { class: "thread-box" }, items)));
  }

  function removePending(id) {
    pending = pending.filter((p) => p.id !== id);
    renderComments();
  }

  // Puts the threads under their lines, and renders the reviews and the
  // review box, after reviews, pending comments or the open box changed.
  function renderComments() {
    const { ordered, elsewhere } = placeComments();
    for (const f of files) {
      if (f.tbody) syncThreads(f);
      const t = threads.get(f.path);
      const n = t ? [...t.values()].reduce((a, x) => a + x.comments.length + x.pending.length, 0) : 0;
      f.count.textContent = n ? ` ${plural(n, "comment", "comments")}` : "";
    }
    replace(reviewsList, ordered.length ? ordered.map((r) => reviewItem(r, elsewhere.get(r.id) || [])) : h("li", { class: "muted" }, "No reviews yet."));
    replace(pendingList, pending.map((p) => h("li", { dataset: { pendingId: String(p.id) } },
      h("code", null, `${p.path}:${p.line}${p.side === "old" ? " (old)" : ""}`), " ", p.body.length > 80 ? `${p.body.slice(0, 80)}…` : p.body, " ",
      h("button", { type: "button", class: "link", onclick: () => removePending(p.id) }, "Remove"))));
    pendingList.hidden = !pending.length;
  }

  function syncThreads(f) {
    const want = threads.get(f.path) || new Map();
    for (const [key, held] of [...f.threadRows]) {
      const t = want.get(key);
      if (!t || t.sig !== held.sig) {
        held.tr.remove();
        f.threadRows.delete(key);
      }
    }
    for (const [key, t] of want) {
      if (f.threadRows.has(key)) continue;
      const line = f.lineRows.get(key);
      if (!line) continue;
      const row = threadRow(f, key, t);
      let next = line.nextSibling;
      while (next && next.classList.contains("thread")) next = next.nextSibling;
      f.tbody.insertBefore(row, next);
      f.threadRows.set(key, { sig: t.sig, tr: row });
    }
  }

  function reviewItem(r, away) {
    const inPlace = r.comments.length - away.length;
    return h("li", { class: "review", dataset: { id: r.id, verdict: r.verdict } },
      h("header", null, h("strong", null, `@${r.author.slug}`), " ",
        h("span", { class: "verdict-mark", dataset: { verdict: r.verdict } }, VERDICT_WORDS[r.verdict] || r.verdict),
        h("span", { class: "muted" }, ` · round ${r.round} · ${short(r.head_commit)} · `),
        h("time", { class: "muted", datetime: r.created_at }, timeAgo(r.created_at)),
        inPlace ? h("span", { class: "muted" }, ` · ${plural(inPlace, "comment", "comments")} on the lines below`) : null),
      r.body ? markdown(r.body) : null,
      away.length ? h("ul", { class: "away-comments" }, away.map((c) => {
        const where = h("code", null, `${c.path}:${c.line}${c.side === "old" ? " (old)" : ""}`);
        return c.outdated
          ? h("li", null, h("details", { class: "comment outdated" }, h("summary", null, h("span", { class: "outdated-mark" }, "outdated"), " ", where, " ", h("code", null, c.text)), markdown(c.body)))
          : h("li", { class: "comment" }, where, markdown(c.body));
      })) : null);
  }

  // The head of the tab: the review's state, the branch, the run.
  let headKey = "";
  function renderHead() {
    const t = task();
    if (!t) return;
    const p = state.projects.get(t.project.id);
    const r = t.review || { state: "none", round: 0, approvals: 0 };
    const required = (p && p.required_approvals) || 0;
    const runs = [...state.runs.values()].filter((x) => x.task && x.task.id === taskId)
      .sort((a, b) => b.created_at.localeCompare(a.created_at));
    const run = runs.find(isOpenRun) || runs.find((x) => x.purpose === "land" || x.purpose === "discard");
    const key = JSON.stringify([r, required, t.changes, t.merge_commit, t.status, run && [run.id, run.state, run.conflicts, run.merge_commit, run.stop_reason]]);
    if (key === headKey) return;
    headKey = key;
    el.dataset.review = r.state;
    replace(summary,
      h("span", { class: "review-state", dataset: { state: r.state } }, STATE_WORDS[r.state] || r.state),
      r.round ? h("span", { class: "review-round" }, ` · round ${r.round}`) : null,
      t.changes ? h("span", { class: "review-approvals" }, ` · ${plural(r.approvals, "approval", "approvals")}${required ? ` of ${required} required` : ""}`) : null,
      t.merge_commit ? h("span", { class: "merged" }, ` · landed as ${short(t.merge_commit)}`) : null);
    replace(branch, t.changes ? [icon("branch", "branch "), h("code", null, t.changes.branch),
      ` at ${short(t.changes.head_commit)} · ${plural(t.changes.files, "file", "files")} `, changeCounts(t.changes)] : null);
    replace(runLine, run ? [runState(run), ` @${run.agent.slug} `, runWork(run),
      !isOpenRun(run) && run.stop_reason ? h("span", { class: "muted" }, ` ${run.stop_reason}`) : null] : null);
    runLine.dataset.runId = run ? run.id : "";
    const open = !!t.changes && t.status !== "done";
    actions.hidden = !open;
    reviewBox.hidden = !open;
    if (!open) confirm.hidden = true;
  }

  const off = onEvent((f) => {
    if (f.type !== "review.created" || f.data.task_id !== taskId) return;
    if (loading) late.push(f.data);
    reviews.set(f.data.id, f.data);
    if (loadedHead !== undefined) renderComments();
  });

  let wasLive = state.conn === "live";
  renderHead();
  load();
  return {
    el,
    update(topics) {
      if (topics.has("tasks") || topics.has("runs") || topics.has("projects")) renderHead();
      if (topics.has("tasks")) sync();
      if (topics.has("conn")) {
        // After a drop the stream resumes where it was, but a resync does
        // not replay events: read the reviews again when live again.
        const live = state.conn === "live";
        if (live && !wasLive && !loading) load();
        wasLive = live;
      }
    },
    close() {
      closed = true;
      off();
    },
  };
}
