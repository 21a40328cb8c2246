// The agents of the board: each with its presence, the runners serving
// it (those polling for it, and those its open runs name), its current runs (task, state,
// elapsed time, last line of output, lease countdown) and its latest
// ended ones; and, for admins, creating an agent, changing its
// configuration and issuing a new token, shown once.

import * as api from "./api.js";
import { state, subscribe, notify, setRuns, isOpenRun } from "./store.js";
import { h, replace, field, select, timeAgo } from "./dom.js";
import { icon } from "./icons.js";
import { leaseBadge } from "./board.js";
import { runState, runElapsed, loadRunLines, runWork } from "./runs.js";

const LISTEN = [["all", "all messages"], ["mentions", "mentions only"]];
const RECENT = 3;
// How often the list of connected runners is read again: no event tells
// of a runner coming or going.
const RUNNERS_EVERY_MS = 10000;

const isAdmin = () => !!state.me && (state.me.role === "admin" || state.me.role === "owner");
const splitList = (s) => s.split(",").map((x) => x.trim()).filter(Boolean);
const taskHref = (run) => {
  const p = state.projects.get(run.project_id);
  return p && run.task ? `#/p/${encodeURIComponent(p.slug)}/t/${encodeURIComponent(run.task.key)}` : null;
};

// The fields of an agent's configuration; `config` fills them.
function configFields(config, { name, withSlug }) {
  const c = config || {};
  const inputs = {
    name: h("input", { name: "name", required: true, maxlength: 200, value: name || "" }),
    slug: withSlug ? h("input", { name: "slug", required: true, pattern: "[a-z0-9_-]{1,64}", maxlength: 64 }) : null,
    labels: h("input", { name: "labels", placeholder: "rust, docs", value: (c.labels || []).join(", ") }),
    model: h("input", { name: "model", maxlength: 200, value: c.model || "" }),
    prompt: h("textarea", { name: "prompt", rows: 4, value: c.prompt || "" }),
    chat_listen: select(LISTEN, c.chat_listen || "mentions", { name: "chat_listen" }),
    task_listen: select(LISTEN, c.task_listen || "mentions", { name: "task_listen" }),
  };
  if (withSlug) {
    inputs.name.addEventListener("input", () => {
      if (!inputs.slug.dataset.touched) inputs.slug.value = inputs.name.value.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
    });
    inputs.slug.addEventListener("input", () => (inputs.slug.dataset.touched = "1"));
  }
  const fields = h("div", { class: "agent-fields" },
    h("div", { class: "grid" }, field("Name", inputs.name), withSlug ? field("Slug", inputs.slug) : null,
      field("Labels (the work it claims)", inputs.labels), field("Model", inputs.model),
      field("Listens in chats to", inputs.chat_listen), field("Listens on tasks to", inputs.task_listen)),
    field("Prompt", inputs.prompt));
  const read = () => ({
    labels: splitList(inputs.labels.value),
    model: inputs.model.value.trim() || null,
    prompt: inputs.prompt.value.trim() ? inputs.prompt.value : null,
    chat_listen: inputs.chat_listen.value,
    task_listen: inputs.task_listen.value,
  });
  return { fields, inputs, read };
}

export function mountAgents({ main, load }) {
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };
  const tokenBox = h("div", { class: "token-box", role: "alert", hidden: true });
  const list = h("div", { class: "agents" });
  const cards = new Map(); // member id → {section, body, slot}
  const requestedTasks = new Set();
  let connected = []; // GET /runners: {name, agents, last_seen_at}

  function showToken(slug, token) {
    const code = h("code", { class: "token" }, token);
    replace(tokenBox,
      h("p", null, icon("key"), ` The token of @${slug}, shown this once: copy it now. The runner acts for the agent with it.`),
      code, " ",
      h("button", { type: "button", onclick: () => navigator.clipboard && navigator.clipboard.writeText(token).catch(() => {}) }, "Copy"), " ",
      h("button", { type: "button", class: "link dismiss", onclick: () => { replace(tokenBox); tokenBox.hidden = true; } }, "Done"));
    tokenBox.hidden = false;
    tokenBox.scrollIntoView({ block: "nearest" });
  }

  // Creating an agent.
  const created = configFields(null, { withSlug: true });
  const createButton = h("button", { type: "submit" }, "Create agent");
  const createForm = h("form", { class: "agent-form", "aria-label": "New agent" }, created.fields, createButton);
  createForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    createButton.disabled = true;
    try {
      const m = await api.post("/members", { name: created.inputs.name.value.trim(), slug: created.inputs.slug.value.trim(), type: "agent", role: "member", agent_config: { capabilities: [], ...created.read() } });
      createForm.reset();
      delete created.inputs.slug.dataset.touched;
      showToken(m.slug, m.token);
    } catch (err) {
      report(err);
    } finally {
      createButton.disabled = false;
    }
  });

  function configure(m, slot) {
    const f = configFields(m.agent_config, { name: m.name });
    const save = h("button", { type: "submit" }, "Save");
    const form = h("form", { class: "agent-form", "aria-label": `Configure @${m.slug}` }, f.fields,
      h("div", { class: "row" }, save, h("button", { type: "button", class: "link", onclick: () => replace(slot) }, "Cancel")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      error.textContent = "";
      save.disabled = true;
      try {
        const old = state.members.get(m.id) || m;
        await api.patch(`/members/${m.id}`, { name: f.inputs.name.value.trim(), agent_config: { ...old.agent_config, ...f.read() } });
        replace(slot);
      } catch (err) {
        report(err);
        save.disabled = false;
      }
    });
    replace(slot, form);
    f.inputs.name.focus();
  }

  function newToken(m, slot) {
    const yes = h("button", { type: "button", class: "danger" }, "Issue a new token");
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      try {
        const t = await api.post(`/members/${m.id}/regenerate-token`);
        replace(slot);
        showToken(m.slug, t.token);
      } catch (err) {
        report(err);
        yes.disabled = false;
      }
    });
    replace(slot, h("p", { class: "row" }, `The token @${m.slug} holds now stops working at once.`, yes,
      h("button", { type: "button", class: "link", onclick: () => replace(slot) }, "Cancel")));
  }

  function runRow(run) {
    const task = run.task ? state.tasks.get(run.task.id) : null;
    const line = state.runLines.get(run.id);
    const href = taskHref(run);
    return h("tr", { class: "run", dataset: { runId: run.id, state: run.state } },
      h("td", { class: "task" }, run.task ? [href ? h("a", { href }, run.task.key) : h("span", { class: "key" }, run.task.key), " ", run.task.title] : "a chat message"),
      h("td", null, runState(run), " ", runWork(run), run.question ? h("span", { class: "muted" }, ` ${run.question.text}`) : null),
      h("td", null, runElapsed(run)),
      h("td", { class: "last-line" }, line ? line.text : h("span", { class: "muted" }, "no output yet")),
      h("td", null, task && task.lease && task.lease.expires_at ? leaseBadge(task.lease, "lease") : h("span", { class: "muted" }, "none")));
  }

  function cardBody(m, runs) {
    const open = runs.filter(isOpenRun);
    const ended = runs.filter((r) => !isOpenRun(r)).slice(0, RECENT);
    const serving = connected.filter((r) => r.agents.some((a) => a.id === m.id)).map((r) => r.name);
    const runners = [...new Set([...serving, ...open.map((r) => r.runner).filter(Boolean)])];
    const c = m.agent_config || {};
    return [
      h("p", { class: "agent-config muted" },
        c.labels && c.labels.length ? ["claims ", h("ul", { class: "labels inline", "aria-label": "labels" }, c.labels.map((l) => h("li", { class: "label" }, l))), " · "] : "claims any label · ",
        c.model ? `model ${c.model} · ` : "",
        `chats: ${c.chat_listen || "mentions"}, tasks: ${c.task_listen || "mentions"}`),
      h("p", { class: "runners" }, h("strong", null, "Runners: "),
        runners.length ? runners.map((r) => h("span", { class: "chip runner", dataset: { runner: r } }, r))
          : h("span", { class: "muted" }, m.status === "offline" ? "none connected" : `none on a run now (the agent is ${m.status})`)),
      open.length ? h("table", { class: "agent-runs" },
        h("thead", null, h("tr", null, ["Task", "State", "Elapsed", "Last output", "Lease"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", null, open.map(runRow)))
        : h("p", { class: "muted no-runs" }, "No run now."),
      ended.length ? h("ul", { class: "recent-runs", "aria-label": "Latest ended runs" }, ended.map((r) => {
        const href = taskHref(r);
        return h("li", { dataset: { runId: r.id, state: r.state } }, runState(r), " ",
          r.task ? (href ? h("a", { href }, r.task.key) : r.task.key) : "chat", " ", runWork(r), " ",
          h("time", { class: "muted", datetime: r.ended_at || r.created_at }, timeAgo(r.ended_at || r.created_at)));
      })) : null,
    ];
  }

  function render() {
    const agents = [...state.members.values()].filter((m) => m.type === "agent" && m.is_active !== false);
    const byAgent = new Map(agents.map((m) => [m.id, []]));
    const runs = [...state.runs.values()].sort((a, b) => b.created_at.localeCompare(a.created_at));
    for (const r of runs) if (byAgent.has(r.agent.id)) byAgent.get(r.agent.id).push(r);
    const open = runs.filter(isOpenRun);
    loadRunLines(open);
    for (const r of open) {
      if (!r.task || state.tasks.has(r.task.id) || requestedTasks.has(r.task.id)) continue;
      requestedTasks.add(r.task.id);
      api.get(`/tasks/${r.task.id}`).then((t) => {
        if (!state.tasks.has(t.id)) state.tasks.set(t.id, t);
        notify("tasks");
      }, () => {});
    }
    for (const id of [...cards.keys()]) if (!byAgent.has(id)) cards.delete(id);
    const sections = agents.map((m) => {
      let card = cards.get(m.id);
      if (!card) {
        const slot = h("div", { class: "agent-slot" });
        const title = h("h2");
        const actions = h("div", { class: "row agent-actions" });
        const body = h("div", { class: "agent-body" });
        card = { section: h("section", { class: "agent", dataset: { id: m.id, slug: m.slug }, "aria-label": `Agent @${m.slug}` }, title, body, actions, slot), title, body, actions, slot };
        cards.set(m.id, card);
      }
      card.section.dataset.slug = m.slug;
      replace(card.title, h("span", { class: `dot ${m.status}`, role: "img", "aria-label": m.status }), icon("agent"), ` ${m.name} `,
        h("span", { class: "muted" }, `@${m.slug}`), " ", h("span", { class: "chip status" }, m.status));
      replace(card.body, cardBody(m, byAgent.get(m.id)));
      replace(card.actions, isAdmin() ? [
        h("button", { type: "button", class: "configure", onclick: () => configure(state.members.get(m.id) || m, card.slot) }, "Configure"),
        h("button", { type: "button", class: "new-token", onclick: () => newToken(m, card.slot) }, icon("key"), " New token"),
      ] : null);
      return card.section;
    });
    const same = list.childNodes.length === sections.length && sections.every((s, i) => list.childNodes[i] === s);
    if (!same) list.replaceChildren(...(sections.length ? sections : [h("p", { class: "muted" }, "No agents yet.")]));
    replace(runnerList, connected.length
      ? h("ul", { class: "runner-list", "aria-label": "Runners connected" }, connected.map((r) =>
        h("li", { dataset: { runner: r.name } }, h("span", { class: "chip runner" }, r.name), " serves ",
          r.agents.map((a, i) => [i ? ", " : "", `@${a.slug}`]), " ",
          h("time", { class: "muted", datetime: r.last_seen_at }, `seen ${timeAgo(r.last_seen_at)}`))))
      : h("p", { class: "muted" }, "No runner connected: start one with taskboard agent run."));
  }

  const runnerList = h("div", { class: "runners-connected" });
  const readRunners = () => api.get("/runners").then((r) => { connected = r; render(); }, () => {});

  main.append(h("h1", null, "Agents"),
    h("p", { class: "muted" }, "Agents run on the board through a runner (taskboard agent run) that acts with the agent's token."),
    error, tokenBox, h("h2", null, "Runners"), runnerList, list,
    ...(isAdmin() ? [h("h2", null, "New agent"), createForm] : []));
  render();
  load(() => api.get("/runs", { limit: 100 }).then((runs) => setRuns(runs))).catch(report);
  readRunners();
  const every = setInterval(readRunners, RUNNERS_EVERY_MS);
  const off = subscribe((t) => {
    if (t.has("members")) readRunners();
    if (t.has("members") || t.has("runs") || t.has("tasks") || t.has("projects")) render();
  });
  return { unmount: () => { clearInterval(every); off(); } };
}
