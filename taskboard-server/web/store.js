// The state the views render from. It changes only from what the server
// answered to a read, or from an event of the stream.

export const state = {
  me: null,
  members: new Map(),
  projects: new Map(),
  labels: new Map(),
  tasks: new Map(),
  loadedProjects: new Set(),
  conn: "connecting",
  readyQueue: null, // null: unknown; false: the server has no ready queue
  runs: new Map(), // runs not yet ended, and those the page has seen lately
  runLines: new Map(), // run id → {n, text}: the last line of its output
};

export const OPEN_RUN_STATES = ["starting", "running", "awaiting_input"];
export const isOpenRun = (run) => OPEN_RUN_STATES.includes(run.state);
// Ended runs kept in memory; older ones are read again when shown.
const KEEP_ENDED_RUNS = 300;
// Transcript entries whose text is the agent's output, as opposed to
// changes of state, questions and answers.
const OUTPUT_KINDS = ["output", "message", "thought", "tool_call", "plan"];

const listeners = new Set();
let scheduled = false;
const changed = new Set();

// Listeners get the set of topics that changed since the last render,
// at most once per animation frame.
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function notify(topic) {
  changed.add(topic);
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    const topics = new Set(changed);
    changed.clear();
    for (const fn of [...listeners]) fn(topics);
  });
}

// Listeners of single events (the open task's comments, the chat).
const eventListeners = new Set();
export function onEvent(fn) {
  eventListeners.add(fn);
  return () => eventListeners.delete(fn);
}

export function setTasks(projectId, tasks) {
  for (const [id, t] of state.tasks) if (t.project.id === projectId) state.tasks.delete(id);
  for (const t of tasks) state.tasks.set(t.id, t);
  state.loadedProjects.add(projectId);
  notify("tasks");
}

// Runs read from the server.
export function setRuns(runs) {
  for (const r of runs) {
    // A read may answer older than an event that came meanwhile: every
    // change of a run's state adds to its transcript, so the longer
    // transcript is the newer run, and an ended run never opens again.
    const held = state.runs.get(r.id);
    if (held && ((!isOpenRun(held) && isOpenRun(r)) || held.transcript_count > r.transcript_count)) continue;
    putRun(r);
  }
  notify("runs");
}

function putRun(run) {
  state.runs.set(run.id, run);
  if (isOpenRun(run)) return;
  const ended = [...state.runs.values()].filter((r) => !isOpenRun(r));
  if (ended.length <= KEEP_ENDED_RUNS) return;
  ended.sort((a, b) => a.created_at.localeCompare(b.created_at));
  for (const r of ended.slice(0, ended.length - KEEP_ENDED_RUNS)) {
    state.runs.delete(r.id);
    state.runLines.delete(r.id);
  }
}

// The last line of output among `entries` (in order) of `runId`.
export function noteRunOutput(runId, entries) {
  const known = state.runLines.get(runId);
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const e = entries[i];
    if (known && known.n >= e.n) return;
    if (!OUTPUT_KINDS.includes(e.kind)) continue;
    const lines = e.text.split("\n").map((l) => l.trim()).filter(Boolean);
    if (!lines.length) continue;
    state.runLines.set(runId, { n: e.n, text: lines[lines.length - 1].slice(0, 300) });
    notify("runs");
    return;
  }
}

export function projectBySlug(slug) {
  for (const p of state.projects.values()) if (p.slug === slug) return p;
  return null;
}

export function tasksOf(projectId) {
  const out = [];
  for (const t of state.tasks.values()) if (t.project.id === projectId) out.push(t);
  out.sort((a, b) => a.position - b.position || a.number - b.number);
  return out;
}

export function taskByKey(key) {
  const k = key.toUpperCase();
  for (const t of state.tasks.values()) if (t.key.toUpperCase() === k) return t;
  return null;
}

function patchTask(id, fn) {
  const t = state.tasks.get(id);
  if (!t) return;
  const copy = { ...t };
  fn(copy);
  state.tasks.set(id, copy);
  notify("tasks");
}

function dependencyLink(link) {
  // A depends_on B, or B blocks A: A's depends_on holds B.
  if (link.link_type === "depends_on") return [link.source_id, link.target_id];
  if (link.link_type === "blocks") return [link.target_id, link.source_id];
  return null;
}

export function apply(frame) {
  const d = frame.data;
  switch (frame.type) {
    case "task.created":
    case "task.updated":
    case "task.ready":
      state.tasks.set(d.id, d);
      notify("tasks");
      break;
    case "task.lease_renewed":
      patchTask(d.id, (t) => {
        t.lease = d.lease;
        t.updated_at = d.updated_at;
      });
      break;
    case "task.deleted":
      state.tasks.delete(d.id);
      notify("tasks");
      break;
    case "step.created":
    case "step.updated":
      patchTask(d.task_id, (t) => {
        const step = { id: d.id, title: d.title, done: d.done, position: d.position };
        t.steps = [...t.steps.filter((s) => s.id !== d.id), step].sort((a, b) => a.position - b.position);
      });
      break;
    case "step.deleted":
      patchTask(d.task_id, (t) => {
        t.steps = t.steps.filter((s) => s.id !== d.id);
      });
      break;
    case "link.created": {
      const dep = dependencyLink(d);
      if (dep) patchTask(dep[0], (t) => {
        if (!t.depends_on.includes(dep[1])) t.depends_on = [...t.depends_on, dep[1]];
      });
      notify("links");
      break;
    }
    case "link.deleted":
      // The link's type is not in the event: reload both tasks' state.
      notify("links");
      break;
    case "label.created":
    case "label.updated": {
      const old = state.labels.get(d.id);
      state.labels.set(d.id, d);
      if (old && old.name !== d.name) {
        for (const t of [...state.tasks.values()]) {
          if (t.labels.includes(old.name)) patchTask(t.id, (c) => {
            c.labels = c.labels.map((l) => (l === old.name ? d.name : l));
          });
        }
      }
      notify("labels");
      break;
    }
    case "label.deleted":
      state.labels.delete(d.id);
      for (const t of [...state.tasks.values()]) {
        if (t.labels.includes(d.name)) patchTask(t.id, (c) => {
          c.labels = c.labels.filter((l) => l !== d.name);
        });
      }
      notify("labels");
      break;
    case "member.created":
    case "member.updated":
      if (d && d.id) {
        state.members.set(d.id, { ...(state.members.get(d.id) || {}), ...d });
        notify("members");
      }
      break;
    case "member.deleted":
      if (d && d.id) {
        const m = state.members.get(d.id);
        if (m) state.members.set(d.id, { ...m, is_active: false });
        notify("members");
      }
      break;
    case "agent.status": {
      const m = state.members.get(d.member_id);
      if (m) state.members.set(d.member_id, { ...m, status: d.status, last_seen_at: frame.ts || m.last_seen_at });
      notify("members");
      break;
    }
    case "run.created":
    case "run.updated":
      putRun(d);
      notify("runs");
      break;
    case "run.output": {
      const run = state.runs.get(d.run_id);
      if (run && d.transcript_count > run.transcript_count) state.runs.set(run.id, { ...run, transcript_count: d.transcript_count });
      if (Array.isArray(d.entries)) noteRunOutput(d.run_id, d.entries);
      break;
    }
    case "project.created":
    case "project.updated":
      state.projects.set(d.id, d);
      notify("projects");
      break;
    case "project.deleted":
      state.projects.delete(d.id);
      notify("projects");
      break;
    default:
      break;
  }
  for (const fn of [...eventListeners]) fn(frame);
}
