// The board of a project: a column per status, cards, filters, inline
// creation, and moving cards by pointer or keyboard (a PATCH of status and
// position; the card moves when the event says it did).

import * as api from "./api.js";
import { state, subscribe, tasksOf, projectBySlug, taskByKey } from "./store.js";
import { h, replace, select, uid, elapsedText } from "./dom.js";
import { openTask } from "./task.js";
import { icon } from "./icons.js";
import { changeCounts } from "./runs.js";

export const STATUSES = [
  ["backlog", "Backlog"],
  ["todo", "To do"],
  ["in_progress", "In progress"],
  ["review", "Review"],
  ["done", "Done"],
];

export function memberDot(ref) {
  if (!ref) return null;
  const m = state.members.get(ref.id);
  if (!m || m.type !== "agent") return null;
  return h("span", { class: `dot ${m.status}`, title: `agent, ${m.status}`, role: "img", "aria-label": `agent ${m.status}` });
}

export function blockers(task) {
  return task.depends_on.filter((id) => {
    const dep = state.tasks.get(id);
    return !dep || dep.status !== "done";
  });
}

export function leaseText(expiresAt) {
  const left = Math.max(0, Math.round((Date.parse(expiresAt) - Date.now()) / 1000));
  const m = Math.floor(left / 60);
  const s = String(left % 60).padStart(2, "0");
  return m >= 60 ? `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}` : `${m}:${s}`;
}

// The countdown to a lease's end: an icon, the words for screen readers,
// and the time left, which the page's clock keeps current.
export function leaseBadge(lease, cls) {
  return h("span", { class: cls, title: `lease held by @${lease.holder ? lease.holder.slug : "?"}`, dataset: { expires: lease.expires_at } },
    icon("timer", "lease ends in "), h("span", { class: "countdown" }, leaseText(lease.expires_at)));
}

// One clock for every lease countdown and elapsed time on the page.
setInterval(() => {
  for (const el of document.querySelectorAll("[data-expires] .countdown")) el.textContent = leaseText(el.parentElement.dataset.expires);
  for (const el of document.querySelectorAll("[data-since]")) el.textContent = elapsedText(el.dataset.since);
}, 1000);

const REVIEW_WORDS = { pending: "awaiting review", changes_requested: "changes requested", approved: "approved" };

// A task's branch and where its review stands: `+12 −3 changes requested
// round 2`, or `merged` once it landed.
export function changesBadge(task) {
  if (!task.changes) return null;
  const r = task.review || { state: "none", round: 0 };
  const word = task.merge_commit ? "merged" : REVIEW_WORDS[r.state];
  return h("span", { class: "changes-badge", title: `branch ${task.changes.branch}`, dataset: { review: task.merge_commit ? "merged" : r.state } },
    icon("branch", "branch "), changeCounts(task.changes),
    word ? h("span", { class: "review-word" }, word) : null,
    r.round > 1 && !task.merge_commit ? h("span", { class: "round" }, `round ${r.round}`) : null);
}

function card(task) {
  const done = task.steps.filter((s) => s.done).length;
  const blocked = blockers(task);
  const lease = task.lease && task.lease.expires_at;
  return h("li", { class: "card", tabindex: "0", dataset: { id: task.id, key: task.key, blocked: String(blocked.length) },
    "aria-label": `${task.key}: ${task.title}${blocked.length ? ", blocked" : ""}`, "aria-describedby": "card-help" },
  h("div", { class: "card-top" },
    h("span", { class: "key" }, task.key),
    h("span", { class: `prio ${task.priority}`, title: `priority ${task.priority}` }, task.priority),
    task.type !== "task" ? h("span", { class: `type ${task.type}` }, task.type) : null,
    blocked.length ? h("span", { class: "blocked", title: "waiting for a dependency" }, icon("blocked"), " blocked") : null),
  h("div", { class: "title" }, task.title),
  task.labels.length ? h("ul", { class: "labels", "aria-label": "labels" }, task.labels.map((l) => h("li", { class: "label" }, l))) : null,
  task.changes ? h("div", { class: "card-changes" }, changesBadge(task)) : null,
  h("div", { class: "card-bottom" },
    task.assignee ? h("span", { class: "assignee" }, memberDot(task.assignee), `@${task.assignee.slug}`) : h("span", { class: "muted" }, "unassigned"),
    task.steps.length ? h("span", { class: "steps", title: "steps done" }, icon("steps", "steps done: "), `${done}/${task.steps.length}`) : null,
    lease ? leaseBadge(task.lease, "lease") : null));
}

export function mountBoard(ctx) {
  const { main } = ctx;
  let project = projectBySlug(ctx.route.slug);
  if (!project) {
    main.append(h("h1", null, "No such project"), h("p", null, h("a", { href: "#/" }, "All projects")));
    return { unmount() {} };
  }
  const filters = { assignee: "", label: "", text: "" };
  const cache = new Map(); // task id → [task object, card element]
  const live = h("p", { class: "sr-only", role: "status", "aria-live": "polite" });
  const assignee = h("select", { "aria-label": "Filter by assignee" });
  const label = h("select", { "aria-label": "Filter by label" });
  const text = h("input", { type: "search", placeholder: "Filter…", "aria-label": "Filter by text" });
  assignee.addEventListener("change", () => { filters.assignee = assignee.value; render(); });
  label.addEventListener("change", () => { filters.label = label.value; render(); });
  text.addEventListener("input", () => { filters.text = text.value.trim().toLowerCase(); render(); });
  const fillFilters = () => {
    const members = [...state.members.values()].filter((m) => m.is_active !== false);
    replace(assignee, ...select([["", "Anyone"], ["-", "Unassigned"], ...members.map((m) => [m.id, `@${m.slug}`])], filters.assignee).children);
    assignee.value = filters.assignee;
    replace(label, ...select([["", "Any label"], ...[...state.labels.values()].map((l) => [l.name, l.name])], filters.label).children);
    label.value = filters.label;
  };
  const lists = new Map();
  const counts = new Map();
  const columns = STATUSES.map(([status, name]) => {
    const headingId = uid("col");
    const list = h("ul", { class: "cards", "aria-labelledby": headingId, dataset: { status } });
    lists.set(status, list);
    const count = h("span", { class: "count" });
    counts.set(status, count);
    const input = h("input", { name: "title", placeholder: "New task…", "aria-label": `New task in ${name}`, maxlength: 500, required: true });
    const error = h("span", { class: "error", role: "alert" });
    const form = h("form", { class: "new-task" }, input, error);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      error.textContent = "";
      try {
        await api.request("POST", "/tasks", { query: { project_id: project.id }, body: { title: input.value.trim(), status } });
        input.value = "";
      } catch (err) {
        error.textContent = err.message;
      }
    });
    return h("section", { class: "column", dataset: { status }, "aria-labelledby": headingId },
      h("h2", { id: headingId }, name, " ", count), form, list);
  });
  const panel = h("div", { class: "panel-slot" });
  const board = h("div", { class: "board" }, columns);
  main.append(
    h("div", { class: "board-head" }, h("h1", null, project.name), h("div", { class: "filters", role: "search" }, assignee, label, text)),
    h("p", { id: "card-help", class: "sr-only" }, "Enter opens the task. Alt with the arrow keys moves it between columns and up or down."),
    live, h("div", { class: "board-wrap" }, board, panel));

  const visible = (t) => {
    if (filters.assignee === "-" && t.assignee) return false;
    if (filters.assignee && filters.assignee !== "-" && (!t.assignee || t.assignee.id !== filters.assignee)) return false;
    if (filters.label && !t.labels.includes(filters.label)) return false;
    if (filters.text && !t.title.toLowerCase().includes(filters.text) && !t.key.toLowerCase().includes(filters.text)) return false;
    return true;
  };

  function render() {
    const started = performance.now();
    const focusedId = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.id : null;
    const byStatus = new Map(STATUSES.map(([s]) => [s, []]));
    const seen = new Set();
    for (const t of tasksOf(project.id)) {
      seen.add(t.id);
      if (!visible(t)) continue;
      let entry = cache.get(t.id);
      // A card shows its dependencies' state too: rebuilt when that changes.
      if (!entry || entry[0] !== t || entry[1].dataset.blocked !== String(blockers(t).length)) {
        entry = [t, card(t)];
        cache.set(t.id, entry);
      }
      byStatus.get(t.status).push(entry[1]);
    }
    for (const id of [...cache.keys()]) if (!seen.has(id)) cache.delete(id);
    for (const [status, cards] of byStatus) {
      const list = lists.get(status);
      const same = list.childNodes.length === cards.length && cards.every((c, i) => list.childNodes[i] === c);
      if (!same) list.replaceChildren(...cards);
      counts.get(status).textContent = String(cards.length);
    }
    if (focusedId) {
      const el = board.querySelector(`[data-id="${CSS.escape(focusedId)}"]`);
      if (el && document.activeElement !== el) el.focus();
    }
    main.dataset.renderMs = (performance.now() - started).toFixed(1);
    main.dataset.cards = String(board.querySelectorAll(".card").length);
  }

  // Where a card would land: the status and the position between its new neighbours.
  function placement(taskId, status, index) {
    const others = tasksOf(project.id).filter((t) => t.status === status && t.id !== taskId && visible(t));
    index = Math.min(index, others.length);
    const prev = others[index - 1];
    const next = others[index];
    if (prev && next) return (prev.position + next.position) / 2;
    if (prev) return prev.position + 1;
    if (next) return next.position - 1;
    const self = state.tasks.get(taskId);
    return self ? self.position : 0;
  }

  async function move(taskId, status, index) {
    const t = state.tasks.get(taskId);
    if (!t) return;
    const position = placement(taskId, status, index);
    if (t.status === status && t.position === position) return;
    const body = { position };
    if (t.status !== status) body.status = status;
    try {
      await api.patch(`/tasks/${t.id}`, body);
      live.textContent = `${t.key} moved to ${STATUSES.find(([s]) => s === status)[1]}`;
    } catch (err) {
      live.textContent = `${t.key} could not be moved: ${err.message}`;
      alertError(err);
    }
  }

  function alertError(err) {
    const note = h("div", { class: "toast", role: "alert" }, err.message);
    document.body.append(note);
    setTimeout(() => note.remove(), 4000);
  }

  // Pointer dragging (mouse, pen and touch alike).
  let drag = null;
  board.addEventListener("pointerdown", (e) => {
    const el = e.target.closest(".card");
    if (!el || e.button !== 0) return;
    drag = { el, id: el.dataset.id, x: e.clientX, y: e.clientY, moving: false, ghost: null, marker: null, target: null };
    el.setPointerCapture(e.pointerId);
  });
  board.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (!drag.moving) {
      if (Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < 5) return;
      drag.moving = true;
      const r = drag.el.getBoundingClientRect();
      drag.ghost = drag.el.cloneNode(true);
      drag.ghost.classList.add("ghost");
      drag.ghost.style.width = `${r.width}px`;
      drag.dx = drag.x - r.left;
      drag.dy = drag.y - r.top;
      document.body.append(drag.ghost);
      drag.el.classList.add("dragging");
      drag.marker = h("li", { class: "drop-marker", "aria-hidden": "true" });
    }
    drag.ghost.style.transform = `translate(${e.clientX - drag.dx}px, ${e.clientY - drag.dy}px)`;
    const under = document.elementsFromPoint(e.clientX, e.clientY).find((n) => n.classList && n.classList.contains("column"));
    if (!under) return;
    const list = lists.get(under.dataset.status);
    const cards = [...list.querySelectorAll(".card")].filter((c) => c !== drag.el);
    let index = cards.findIndex((c) => {
      const r = c.getBoundingClientRect();
      return e.clientY < r.top + r.height / 2;
    });
    if (index < 0) index = cards.length;
    drag.target = { status: under.dataset.status, index };
    list.insertBefore(drag.marker, cards[index] || null);
  });
  const endDrag = (e, cancelled) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (!d.moving) return;
    suppressClick = true;
    d.ghost.remove();
    d.marker.remove();
    d.el.classList.remove("dragging");
    if (!cancelled && d.target) move(d.id, d.target.status, d.target.index);
  };
  // A click opens the task, unless it ends a drag.
  let suppressClick = false;
  board.addEventListener("click", (e) => {
    const el = e.target.closest(".card");
    if (!el) return;
    if (suppressClick) suppressClick = false;
    else openByKey(el.dataset.key);
  });
  board.addEventListener("pointerdown", () => { suppressClick = false; }, true);
  board.addEventListener("pointerup", (e) => endDrag(e, false));
  board.addEventListener("pointercancel", (e) => endDrag(e, true));

  board.addEventListener("keydown", (e) => {
    const el = e.target.closest && e.target.closest(".card");
    if (!el) return;
    const t = state.tasks.get(el.dataset.id);
    if (!t) return;
    if ((e.key === "Enter" || e.key === " ") && !e.altKey) {
      e.preventDefault();
      openByKey(t.key);
      return;
    }
    if (!e.altKey) return;
    const col = STATUSES.findIndex(([s]) => s === t.status);
    const inColumn = tasksOf(project.id).filter((x) => x.status === t.status && visible(x));
    const at = inColumn.findIndex((x) => x.id === t.id);
    if (e.key === "ArrowRight" && col < STATUSES.length - 1) move(t.id, STATUSES[col + 1][0], Infinity);
    else if (e.key === "ArrowLeft" && col > 0) move(t.id, STATUSES[col - 1][0], Infinity);
    else if (e.key === "ArrowUp" && at > 0) move(t.id, t.status, at - 1);
    else if (e.key === "ArrowDown" && at < inColumn.length - 1) move(t.id, t.status, at + 1);
    else return;
    e.preventDefault();
  });

  function openByKey(key) {
    location.hash = `#/p/${encodeURIComponent(project.slug)}/t/${encodeURIComponent(key)}`;
  }

  let taskView = null;
  const taskHash = (key, tab) => `#/p/${encodeURIComponent(project.slug)}/t/${encodeURIComponent(key)}${tab === "changes" ? "/changes" : ""}`;
  function navigate(r) {
    const t = r.key ? taskByKey(r.key) : null;
    if (taskView && (!t || taskView.id !== t.id)) {
      const closed = taskView.id;
      taskView.close();
      taskView = null;
      // Focus goes back to the card the panel was opened from.
      const el = board.querySelector(`[data-id="${CSS.escape(closed)}"]`);
      if (el && !t) el.focus();
    }
    if (t && !taskView) {
      taskView = openTask(panel, t.id, {
        close: () => { location.hash = `#/p/${encodeURIComponent(project.slug)}`; },
        openKey: openByKey,
        tab: r.tab,
        selectTab: (tab) => { location.hash = taskHash(t.key, tab); },
      });
    } else if (t && taskView) taskView.showTab(r.tab);
  }

  fillFilters();
  render();
  const off = subscribe((topics) => {
    project = state.projects.get(project.id) || project;
    if (topics.has("members") || topics.has("labels")) {
      cache.clear();
      fillFilters();
    }
    if (topics.has("tasks") || topics.has("members") || topics.has("labels")) render();
    if (taskView) taskView.update(topics);
    if (topics.has("tasks") && ctx.route.key && !taskView) navigate(ctx.route);
  });
  const view = {
    route: ctx.route,
    navigate(r) {
      ctx.route = r;
      navigate(r);
    },
    unmount() {
      off();
      if (taskView) taskView.close();
    },
  };
  if (!state.loadedProjects.has(project.id)) {
    ctx.load(() => ctx.loadProjectTasks(project.id)).then(() => navigate(ctx.route), alertError);
  } else navigate(ctx.route);
  return view;
}
