// Runs on the task panel: the task's runs with their state, the live
// transcript of one of them, the question it asks with its options as
// buttons, cancel, retry, and starting a run of an agent. What is shown
// comes from the run events; the page never assumes a write took effect.

import * as api from "./api.js";
import { state, onEvent, setRuns, isOpenRun, noteRunOutput } from "./store.js";
import { h, replace, select, timeAgo, elapsedText } from "./dom.js";
import { icon } from "./icons.js";

// Transcript entries kept on the page for the run shown; older ones are
// dropped from the page (the CLI's `taskboard run logs` shows them all).
export const SHOWN_ENTRIES = 500;
// Entries read when a run is first shown: the end of its transcript.
const TAIL_ENTRIES = 200;

const STATE_WORDS = {
  starting: "starting",
  running: "running",
  awaiting_input: "awaiting input",
  succeeded: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
  timed_out: "timed out",
  lost: "lost",
};

export function runState(run) {
  return h("span", { class: "run-state", dataset: { state: run.state } }, STATE_WORDS[run.state] || run.state);
}

// A change's counts: `+12 −3`.
export function changeCounts(c) {
  return h("span", { class: "counts", title: `${c.additions} lines added, ${c.deletions} removed` },
    h("span", { class: "additions" }, `+${c.additions}`), " ", h("span", { class: "deletions" }, `−${c.deletions}`));
}

// What a run is for when it is not plain work, its round, its change,
// and a landing's result.
export function runWork(run) {
  const purpose = run.purpose && run.purpose !== "work" ? run.purpose : null;
  return [
    purpose ? h("span", { class: "chip purpose", dataset: { purpose } }, purpose === "land" && run.merge_method ? `land · ${run.merge_method}` : purpose) : null,
    run.round ? h("span", { class: "muted round" }, ` round ${run.round} `) : null,
    run.changes ? changeCounts(run.changes) : null,
    run.conflicts && run.conflicts.length ? h("span", { class: "conflicts" }, ` conflicts in ${run.conflicts.join(", ")}`) : null,
    run.merge_commit ? h("span", { class: "muted merge-commit" }, ` landed as ${run.merge_commit.slice(0, 10)}`) : null,
  ];
}

// How long the run has been going (kept current by the page's clock), or went.
export function runElapsed(run) {
  const from = run.started_at || run.created_at;
  if (isOpenRun(run)) return h("span", { class: "elapsed", title: "elapsed", dataset: { since: from } }, elapsedText(from));
  return h("span", { class: "elapsed", title: "took" }, elapsedText(from, run.ended_at || run.created_at));
}

// Reads the end of the transcripts of `runs` whose last line the page
// does not know yet.
const linesRead = new Set();
export function loadRunLines(runs) {
  for (const r of runs) {
    if (state.runLines.has(r.id) || !r.transcript_count || linesRead.has(r.id)) continue;
    linesRead.add(r.id);
    api.get(`/runs/${r.id}/transcript`, { after: Math.max(0, r.transcript_count - 20), limit: 20 })
      .then((entries) => noteRunOutput(r.id, entries), () => {});
  }
}

// Characters of one entry shown; an entry holds up to 64 KB.
const ENTRY_CHARS = 4000;

const ENTRY_WORDS = { output: "", message: "message", thought: "thought", tool_call: "tool", plan: "plan", question: "question", answer: "answer", state: "state" };

// The transcript of one run at a time, following its `run.output` events.
function transcriptView(report) {
  const note = h("p", { class: "muted transcript-note" });
  const list = h("ol", { class: "transcript", "aria-label": "Transcript" });
  const el = h("div", { class: "transcript-box" }, note, list);
  let runId = null;
  let last = 0; // the last entry shown
  let loading = 0; // a read of the run shown is under way (its number)
  let queued = [];
  const entry = (e) => h("li", { class: `entry ${e.kind}`, dataset: { n: String(e.n), kind: e.kind } },
    ENTRY_WORDS[e.kind] ? h("span", { class: "entry-kind" }, ENTRY_WORDS[e.kind]) : null,
    h("span", { class: "entry-text" }, e.text.length > ENTRY_CHARS ? `${e.text.slice(0, ENTRY_CHARS)} … (${e.text.length - ENTRY_CHARS} more characters)` : e.text));
  const add = (entries) => {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    for (const e of entries) {
      if (e.n <= last) continue;
      list.append(entry(e));
      last = e.n;
    }
    while (list.childElementCount > SHOWN_ENTRIES) list.firstElementChild.remove();
    const first = list.firstElementChild ? Number(list.firstElementChild.dataset.n) : last + 1;
    note.textContent = first > 1 ? `${first - 1} earlier entries are not shown.` : "";
    el.dataset.last = String(last);
    if (atBottom) list.scrollTop = list.scrollHeight;
  };
  let reads = 0;
  const read = async (after) => {
    const mine = ++reads;
    loading = mine;
    const id = runId;
    try {
      const entries = await api.get(`/runs/${id}/transcript`, { after, limit: 1000 });
      if (runId !== id || reads !== mine) return;
      if (last < after) last = after;
      add(entries);
    } catch (e) {
      report(e);
    } finally {
      if (reads === mine) {
        loading = 0;
        const frames = queued;
        queued = [];
        for (const d of frames) output(d);
      }
    }
  };
  // A `run.output` frame: entries in order, maybe after a gap (a frame
  // missed while the page was away), which is read from the server.
  function output(d) {
    if (d.run_id !== runId) return;
    if (loading) {
      queued.push(d);
      return;
    }
    const fresh = d.entries.filter((e) => e.n > last);
    if (!fresh.length) return;
    if (fresh[0].n === last + 1) add(fresh);
    else if (d.transcript_count - last > SHOWN_ENTRIES) {
      list.replaceChildren();
      last = d.transcript_count - TAIL_ENTRIES;
      read(last);
    } else read(last);
  }
  return {
    el,
    get runId() { return runId; },
    show(run) {
      if (!run) {
        runId = null;
        list.replaceChildren();
        note.textContent = "";
        return;
      }
      if (run.id === runId) return;
      runId = run.id;
      last = Math.max(0, run.transcript_count - TAIL_ENTRIES);
      list.replaceChildren();
      queued = [];
      el.dataset.runId = run.id;
      read(last);
    },
    output,
  };
}

// The question of a run awaiting a person: its options as buttons, or a
// text answer when it has none.
function questionBox(run, report) {
  const q = run.question;
  const answer = async (body, controls) => {
    for (const c of controls) c.disabled = true;
    try {
      await api.post(`/runs/${run.id}/answer`, body);
    } catch (e) {
      report(e);
      for (const c of controls) c.disabled = false;
    }
  };
  let body;
  if (q.options.length) {
    const buttons = q.options.map((o) => h("button", { type: "button", class: "option", dataset: { optionId: o.id } }, o.label));
    buttons.forEach((b, i) => b.addEventListener("click", () => answer({ option_id: q.options[i].id }, buttons)));
    body = buttons;
  } else {
    const text = h("input", { "aria-label": "Answer", maxlength: 10000 });
    const send = h("button", { type: "submit" }, "Answer");
    body = h("form", { class: "row" }, text, send);
    body.addEventListener("submit", (e) => {
      e.preventDefault();
      if (text.value.trim()) answer({ text: text.value.trim() }, [text, send]);
    });
  }
  return h("div", { class: "run-question", role: "group", "aria-label": `Question from @${run.agent.slug}` },
    h("p", { class: "question-text" }, icon("question"), h("strong", null, ` @${run.agent.slug} asks: `), q.text),
    h("div", { class: "options" }, body));
}

// The runs section of the panel of task `taskId`.
export function taskRuns(taskId, { report }) {
  const list = h("ul", { class: "runs-list", "aria-label": "Runs of this task" });
  const current = h("div", { class: "run-current", "aria-live": "polite" });
  const transcript = transcriptView(report);
  let selected = null; // the run a person chose to look at; otherwise the newest
  const runsOf = () => [...state.runs.values()].filter((r) => r.task && r.task.id === taskId)
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  const shown = (runs) => runs.find((r) => r.id === selected) || runs.find(isOpenRun) || runs[0] || null;

  const act = async (button, path, body) => {
    button.disabled = true;
    try {
      await api.post(path, body);
    } catch (e) {
      report(e);
      button.disabled = false;
    }
  };
  const start = (agentId, button) => {
    selected = null;
    act(button, `/tasks/${taskId}/runs`, { agent_id: agentId });
  };

  // "Run agent…": an agent to start on the task.
  const agents = h("select", { "aria-label": "Agent to run" });
  const startButton = h("button", { type: "submit" }, icon("play"), " Start");
  const starter = h("form", { class: "row run-start", hidden: true }, agents, startButton,
    h("button", { type: "button", class: "link", onclick: () => { starter.hidden = true; } }, "Cancel"));
  starter.addEventListener("submit", (e) => {
    e.preventDefault();
    if (agents.value) start(agents.value, startButton);
    starter.hidden = true;
  });
  const runAgent = h("button", { type: "button", class: "run-agent", onclick: () => {
    const active = [...state.members.values()].filter((m) => m.type === "agent" && m.is_active !== false);
    replace(agents, ...select(active.map((m) => [m.id, `@${m.slug}`]), agents.value).children);
    startButton.disabled = !active.length;
    starter.hidden = false;
    agents.focus();
  } }, icon("play"), " Run agent…");

  let listKey = "";
  let currentKey = "";
  function render() {
    const runs = runsOf();
    const task = state.tasks.get(taskId);
    const open = runs.find(isOpenRun);
    const run = shown(runs);
    runAgent.hidden = !!open || !task || task.status === "done";
    if (runAgent.hidden) starter.hidden = true;
    const canRetry = !open && task && task.status !== "done";
    const key = JSON.stringify([runs.map((r) => [r.id, r.state, r.runner, r.ended_at, r.changes, r.conflicts, r.merge_commit]), run && run.id, canRetry]);
    if (key !== listKey) {
      listKey = key;
      replace(list, runs.length ? runs.map((r) => h("li", { class: "run", dataset: { runId: r.id, state: r.state }, "aria-current": run && r.id === run.id ? "true" : null },
        runState(r), " ", h("span", { class: "run-who" }, `@${r.agent.slug}`), " ", runWork(r), " ",
        h("time", { class: "muted", datetime: r.created_at }, timeAgo(r.created_at)), " ", runElapsed(r),
        r.runner ? h("span", { class: "muted runner" }, ` on ${r.runner}`) : null,
        !isOpenRun(r) && (r.stop_reason || r.exit_code !== null) ? h("span", { class: "muted" }, ` ${r.exit_code !== null ? `exit ${r.exit_code}` : ""} ${r.stop_reason || ""}`) : null,
        h("span", { class: "spacer" }),
        r.id !== (run && run.id) ? h("button", { type: "button", class: "link show-run", onclick: () => { selected = r.id; render(); } }, "Transcript") : null,
        isOpenRun(r) ? h("button", { type: "button", class: "cancel-run", onclick: (e) => act(e.currentTarget, `/runs/${r.id}/cancel`) }, icon("stop"), " Cancel") : null,
        !isOpenRun(r) && canRetry && r === runs[0] ? h("button", { type: "button", class: "retry-run", onclick: (e) => start(r.agent.id, e.currentTarget) }, icon("retry"), " Retry") : null))
        : h("li", { class: "muted" }, "No agent has run on this task."));
    }
    const ckey = JSON.stringify(run && [run.id, run.state, run.question && run.question.id]);
    if (ckey !== currentKey) {
      currentKey = ckey;
      replace(current, run && run.state === "awaiting_input" && run.question ? questionBox(run, report) : null);
    }
    transcript.show(run);
  }

  const off = onEvent((f) => {
    if (f.type === "run.output" && f.data.task_id === taskId) transcript.output(f.data);
  });
  const el = h("section", { class: "runs", "aria-label": "Runs" }, h("h3", null, "Runs"),
    list, current, transcript.el, h("div", { class: "row" }, runAgent), starter);
  api.get("/runs", { task_id: taskId, limit: 20 }).then((runs) => setRuns(runs), report);
  render();
  return {
    el,
    update(topics) {
      if (topics.has("runs") || topics.has("tasks")) render();
    },
    close: off,
  };
}
