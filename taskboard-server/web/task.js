// The details of one task, in a panel beside the board: fields, steps,
// comments, links, watchers and the audit log, and in a second tab its
// changes (changes.js). Edits are API calls; the panel shows what the
// events say.

import * as api from "./api.js";
import { state, onEvent } from "./store.js";
import { h, replace, field, select, uid, timeAgo } from "./dom.js";
import { markdown } from "./markdown.js";
import { STATUSES, blockers, leaseBadge, memberDot } from "./board.js";
import { messageList, composer } from "./messages.js";
import { icon } from "./icons.js";
import { taskRuns, changeCounts } from "./runs.js";

const PRIORITIES = ["low", "medium", "high", "urgent"];
const TYPES = ["task", "bug", "epic"];

export function openTask(slot, taskId, { close, openKey, tab, selectTab }) {
  const titleId = uid("task-title");
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };
  const save = async (body) => {
    error.textContent = "";
    try {
      await api.patch(`/tasks/${taskId}`, body);
    } catch (e) {
      report(e);
    }
  };
  const task = () => state.tasks.get(taskId);
  const t0 = task();

  // Editable fields: their values follow the task unless being edited.
  const title = h("input", { class: "title-input", "aria-label": "Title", maxlength: 500 });
  title.addEventListener("change", () => title.value.trim() && save({ title: title.value.trim() }));
  const people = () => [["", "nobody"], ...[...state.members.values()].filter((m) => m.is_active !== false).map((m) => [m.id, `@${m.slug}`])];
  const status = select(STATUSES, t0.status, { "aria-label": "Status" });
  status.addEventListener("change", () => save({ status: status.value }));
  const type = select(TYPES.map((x) => [x, x]), t0.type);
  type.addEventListener("change", () => save({ type: type.value }));
  const priority = select(PRIORITIES.map((x) => [x, x]), t0.priority);
  priority.addEventListener("change", () => save({ priority: priority.value }));
  const assignee = h("select");
  assignee.addEventListener("change", () => save({ assignee_id: assignee.value || null }));
  const reviewer = h("select");
  reviewer.addEventListener("change", () => save({ reviewer_id: reviewer.value || null }));
  const labels = h("input", { placeholder: "comma, separated" });
  labels.addEventListener("change", () => save({ labels: labels.value.split(",").map((s) => s.trim()).filter(Boolean) }));

  const description = h("div", { class: "description" });
  let editingDescription = false;
  const renderDescription = () => {
    if (editingDescription) return;
    const t = task();
    replace(description,
      t.description ? markdown(t.description) : h("p", { class: "muted" }, "No description."),
      h("button", { type: "button", class: "link", onclick: editDescription }, "Edit description"));
  };
  function editDescription() {
    editingDescription = true;
    const area = h("textarea", { rows: 8, "aria-label": "Description", value: task().description || "" });
    const done = () => { editingDescription = false; renderDescription(); };
    replace(description, area, h("div", { class: "row" },
      h("button", { type: "button", onclick: async () => { await save({ description: area.value }); done(); } }, "Save"),
      h("button", { type: "button", class: "link", onclick: done }, "Cancel")));
    area.focus();
  }

  const badges = h("p", { class: "badges" });
  const steps = h("ul", { class: "steps-list", "aria-label": "Steps" });
  const stepInput = h("input", { "aria-label": "New step", placeholder: "New step…", maxlength: 500 });
  const stepForm = h("form", { class: "row" }, stepInput, h("button", { type: "submit" }, "Add step"));
  stepForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!stepInput.value.trim()) return;
    try {
      await api.post(`/tasks/${taskId}/steps`, { title: stepInput.value.trim() });
      stepInput.value = "";
    } catch (err) {
      report(err);
    }
  });
  // Up and down move a step one place (a PATCH of its position); the
  // step events put the list in its new order.
  const moveStep = (s, position) => api.patch(`/tasks/${taskId}/steps/${s.id}`, { position }).catch(report);
  const renderSteps = () => {
    const t = task();
    const all = t.steps;
    replace(steps, all.map((s, i) => {
      const box = h("input", { type: "checkbox", checked: s.done, id: `step-${s.id}` });
      box.addEventListener("change", () => {
        box.checked = s.done; // the event will tick it
        api.patch(`/tasks/${taskId}/steps/${s.id}`, { done: !s.done }).catch(report);
      });
      return h("li", { dataset: { stepId: s.id } }, box, h("label", { for: `step-${s.id}` }, s.title),
        h("button", { type: "button", class: "link move-up", "aria-label": `Move step ${s.title} up`, disabled: i === 0,
          onclick: () => moveStep(s, i) }, icon("up")),
        h("button", { type: "button", class: "link move-down", "aria-label": `Move step ${s.title} down`, disabled: i === all.length - 1,
          onclick: () => moveStep(s, i + 2) }, icon("down")),
        h("button", { type: "button", class: "link", "aria-label": `Delete step ${s.title}`,
          onclick: () => api.del(`/tasks/${taskId}/steps/${s.id}`).catch(report) }, icon("close")));
    }));
  };

  const links = h("ul", { class: "links", "aria-label": "Links" });
  const linkType = select([["depends_on", "depends on"], ["blocks", "blocks"], ["relates_to", "relates to"]], "depends_on", { "aria-label": "Link type" });
  const linkKey = h("input", { "aria-label": "Task key", placeholder: "KEY-12" });
  const linkForm = h("form", { class: "row" }, linkType, linkKey, h("button", { type: "submit" }, "Link"));
  linkForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const found = await api.get("/tasks", { q: linkKey.value.trim() });
      const target = found.find((x) => x.key.toUpperCase() === linkKey.value.trim().toUpperCase());
      if (!target) throw new Error(`no task ${linkKey.value.trim()}`);
      await api.post(`/tasks/${taskId}/links`, { link_type: linkType.value, target_id: target.id });
      linkKey.value = "";
    } catch (err) {
      report(err);
    }
  });
  const loadLinks = () => api.get(`/tasks/${taskId}/links`).then((list) => replace(links, list.length ? list.map((l) => {
    const outgoing = l.source_id === taskId;
    const otherKey = outgoing ? l.target_key : l.source_key;
    const otherTitle = outgoing ? l.target_title : l.source_title;
    const verb = outgoing ? l.link_type.replace("_", " ") : { depends_on: "needed by", blocks: "blocked by", relates_to: "relates to" }[l.link_type];
    return h("li", null, `${verb} `, h("a", { href: "#", onclick: (e) => { e.preventDefault(); openKey(otherKey); } }, otherKey), ` ${otherTitle} `,
      h("button", { type: "button", class: "link", "aria-label": `Remove link to ${otherKey}`,
        onclick: () => api.del(`/tasks/${l.source_id}/links/${l.id}`).then(loadLinks, report) }, icon("close")));
  }) : h("li", { class: "muted" }, "No links.")), report);

  const watchers = h("p", { class: "watchers" });
  const renderWatchers = () => {
    const t = task();
    const me = state.me && state.me.id;
    const watching = t.watcher_ids.includes(me);
    replace(watchers, t.watcher_ids.length
      ? t.watcher_ids.map((id) => { const m = state.members.get(id); return h("span", { class: "chip" }, m ? `@${m.slug}` : "?"); })
      : h("span", { class: "muted" }, "Nobody watches this task. "),
    " ", h("button", { type: "button", onclick: () => (watching ? api.del(`/tasks/${taskId}/watch`) : api.post(`/tasks/${taskId}/watch`)).catch(report) },
      watching ? "Stop watching" : "Watch"));
  };

  const audit = h("ol", { class: "audit" });
  const auditBox = h("details", null, h("summary", null, "Audit log"), audit);
  const loadAudit = () => api.get(`/tasks/${taskId}/actions`).then((list) => replace(audit, list.map((a) =>
    h("li", null, h("strong", null, `@${a.actor.slug}`), ` ${a.action} `,
      Object.entries(a.changes).map(([k, c]) => h("span", { class: "change" }, `${k}: ${JSON.stringify(c.from)} → ${JSON.stringify(c.to)} `)),
      h("time", { class: "muted", datetime: a.created_at }, timeAgo(a.created_at))))), report);
  auditBox.addEventListener("toggle", () => auditBox.open && loadAudit());

  const comments = messageList({ task_id: taskId }, { emptyText: "No comments yet." });
  const runs = taskRuns(taskId, { report });
  const closeButton = h("button", { type: "button", class: "close", "aria-label": "Close task", onclick: close }, icon("close"));
  const heading = h("h2", { id: titleId });
  // Two tabs: the details, and the changes of the task's branch (read
  // only once that tab is first shown: a diff can weigh 2 MB).
  const tabButton = (name, ...label) => h("button", { type: "button", role: "tab", class: "tab", id: uid("tab"), dataset: { tab: name },
    onclick: () => (selectTab ? selectTab(name) : showTab(name)) }, ...label);
  const changesLabel = h("span", { class: "tab-counts" });
  const tabs = { details: tabButton("details", "Details"), changes: tabButton("changes", "Changes", changesLabel) };
  const tablist = h("div", { class: "tabs", role: "tablist", "aria-label": "Task views" }, tabs.details, tabs.changes);
  tablist.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    e.preventDefault();
    const next = shownTab === "details" ? "changes" : "details";
    tabs[next].focus();
    (selectTab || showTab)(next);
  });
  const detailsPanel = h("div", { class: "tab-panel details", role: "tabpanel", "aria-labelledby": tabs.details.id });
  const changesPanel = h("div", { class: "tab-panel changes-panel", role: "tabpanel", "aria-labelledby": tabs.changes.id, hidden: true });
  let changes = null; // the view, or the promise of its module
  let shownTab = null;
  let closed = false;
  function showTab(name) {
    const wanted = name === "changes" ? "changes" : "details";
    if (wanted === shownTab) return;
    shownTab = wanted;
    for (const [n, b] of Object.entries(tabs)) {
      b.setAttribute("aria-selected", String(n === wanted));
      b.tabIndex = n === wanted ? 0 : -1;
    }
    detailsPanel.hidden = wanted !== "details";
    changesPanel.hidden = wanted !== "changes";
    slot.classList.toggle("wide", wanted === "changes");
    if (wanted === "changes" && !changes) {
      // The module is read when first needed, as the other views are.
      changes = import("./changes.js").then(({ changesTab }) => {
        if (closed) return null;
        const view = changesTab(taskId);
        changesPanel.append(view.el);
        changes = view;
        return view;
      }, (e) => {
        changes = null;
        report(e);
      });
    }
  }
  const panel = h("aside", { class: "panel", role: "dialog", "aria-labelledby": titleId, tabindex: "-1" },
    h("div", { class: "panel-head" }, heading, closeButton),
    tablist, detailsPanel, changesPanel);
  detailsPanel.append(
    error,
    field("Title", title),
    h("div", { class: "grid" }, field("Status", status), field("Type", type), field("Priority", priority),
      field("Assignee", assignee), field("Reviewer", reviewer), field("Labels", labels)),
    badges,
    h("section", { "aria-label": "Description" }, h("h3", null, "Description"), description),
    h("section", { "aria-label": "Steps" }, h("h3", null, "Steps"), steps, stepForm),
    runs.el,
    h("section", { "aria-label": "Links" }, h("h3", null, "Links"), links, linkForm),
    h("section", { "aria-label": "Watchers" }, h("h3", null, "Watchers"), watchers),
    auditBox,
    h("section", { "aria-label": "Comments" }, h("h3", null, "Comments"), comments.el,
      composer({ task_id: taskId }, { label: "New comment", onSent: comments.add })));
  showTab(tab);
  panel.addEventListener("keydown", (e) => { if (e.key === "Escape") close(); });

  const keep = (el, value) => { if (document.activeElement !== el) el.value = value; };
  function update() {
    const t = task();
    if (!t) {
      replace(heading, "This task was deleted.");
      return;
    }
    replace(heading, h("span", { class: "key" }, t.key), " ", t.title);
    replace(changesLabel, t.changes ? [" ", changeCounts(t.changes)] : null);
    keep(title, t.title);
    keep(status, t.status);
    keep(type, t.type);
    keep(priority, t.priority);
    replace(assignee, ...select(people(), "").children);
    assignee.value = t.assignee ? t.assignee.id : "";
    replace(reviewer, ...select(people(), "").children);
    reviewer.value = t.reviewer ? t.reviewer.id : "";
    keep(labels, t.labels.join(", "));
    const blocked = blockers(t);
    replace(badges,
      t.assignee ? h("span", { class: "chip" }, memberDot(t.assignee), `assigned to @${t.assignee.slug}`) : null,
      blocked.length ? h("span", { class: "chip blocked" }, icon("blocked"), `waiting for ${blocked.map((id) => (state.tasks.get(id) || { key: "a task" }).key).join(", ")}`) : null,
      t.lease && t.lease.expires_at ? leaseBadge(t.lease, "chip lease") : null,
      t.parent ? h("span", { class: "chip" }, "parent ", h("a", { href: "#", onclick: (e) => { e.preventDefault(); openKey(t.parent.key); } }, t.parent.key)) : null);
    renderDescription();
    renderSteps();
    renderWatchers();
    if (auditBox.open) loadAudit();
  }
  const offLinks = onEvent((f) => {
    if (f.type.startsWith("link.") && (f.data.source_id === taskId || f.data.target_id === taskId)) loadLinks();
  });
  slot.replaceChildren(panel);
  slot.classList.add("open");
  update();
  loadLinks();
  panel.focus();
  return {
    id: taskId,
    update(topics) {
      if (topics.has("tasks") || topics.has("members")) update();
      runs.update(topics);
      if (changes && changes.update) changes.update(topics);
    },
    showTab,
    close() {
      closed = true;
      if (changes && changes.close) changes.close();
      comments.close();
      runs.close();
      offLinks();
      slot.replaceChildren();
      slot.classList.remove("open", "wide");
    },
  };
}
