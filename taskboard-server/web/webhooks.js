// Webhooks, for admins and owners: the list with each one's backlog,
// creating one (its signing secret shown once), turning it off and on,
// rotating its secret (the new one shown once), its delivery log with
// redelivery, and deleting it. The API decides who may: a refusal's detail is shown.

import * as api from "./api.js";
import { state, subscribe, onEvent } from "./store.js";
import { h, replace, field, timeAgo } from "./dom.js";
import { icon } from "./icons.js";
import { secretBox } from "./secret.js";

const when = (ts) => (ts ? h("time", { datetime: ts, title: ts }, timeAgo(ts)) : "");
const projectName = (id) => (id ? (state.projects.get(id) || { slug: id.slice(0, 8) }).slug : "all projects");

export function mountWebhooks({ main }) {
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };
  const secret = secretBox();
  const rows = h("tbody");
  const table = h("table", { class: "webhooks", "aria-label": "Webhooks" },
    h("thead", null, h("tr", null, ["URL", "Events", "Project", "State", "Backlog", ""].map((c) => h("th", { scope: "col" }, c)))), rows);
  let hooks = [];
  let shown = null; // the webhook whose deliveries are open
  let deleting = null; // the webhook whose deletion waits for a confirmation

  const act = async (fn) => {
    error.textContent = "";
    try {
      await fn();
    } catch (e) {
      report(e);
    }
  };

  // A webhook's state with its health: off, nothing sent yet, delivering,
  // or failing with how many in a row and the last answer.
  const health = (w) => {
    const hl = w.health || {};
    if (!w.active) return ["off", "off"];
    if (!hl.last_state) return ["none", "on · nothing sent yet"];
    if (hl.consecutive_failures > 0) {
      const why = hl.last_status ? `HTTP ${hl.last_status}` : (hl.last_error || "no answer");
      return ["failing", `on · failing: ${hl.consecutive_failures} in a row, last ${why}`];
    }
    return ["ok", `on · delivering${hl.last_status ? `, last HTTP ${hl.last_status}` : ""}`];
  };

  const row = (w) => h("tr", { dataset: { webhookId: w.id, url: w.url, active: String(w.active), health: health(w)[0] } },
    h("td", { class: "url" }, w.url, w.description ? h("div", { class: "muted" }, w.description) : null),
    h("td", { class: "events" }, w.events.join(", ")),
    h("td", null, projectName(w.project_id)),
    h("td", { class: "state" }, health(w)[1]),
    h("td", { class: "backlog" }, w.backlog ?? ""),
    h("td", { class: "actions" },
      h("button", { type: "button", class: "toggle", onclick: () => act(async () => {
        await api.patch(`/webhooks/${w.id}`, { active: !w.active });
        await load();
      }) }, w.active ? "Turn off" : "Turn on"), " ",
      h("button", { type: "button", class: "rotate", onclick: () => act(async () => {
        const rotated = await api.post(`/webhooks/${w.id}/rotate-secret`);
        secret.show(`The new signing secret of ${rotated.url} (the old one signs beside it for 24 hours)`, rotated.secret);
      }) }, icon("retry"), " Rotate secret"), " ",
      h("button", { type: "button", class: "show-deliveries", "aria-pressed": String(shown === w.id), onclick: () => {
        shown = w.id;
        render();
        loadDeliveries();
      } }, "Deliveries"), " ",
      deleting === w.id ? ["Delete it with its delivery log? ",
        h("button", { type: "button", class: "danger confirm-delete", onclick: () => act(async () => {
          deleting = null;
          if (shown === w.id) shown = null;
          await api.del(`/webhooks/${w.id}`);
          await load();
        }) }, "Delete"), " ",
        h("button", { type: "button", class: "link", onclick: () => { deleting = null; render(); } }, "Cancel")]
        : h("button", { type: "button", class: "delete", onclick: () => { deleting = w.id; render(); } }, "Delete")));

  const render = () => {
    replace(rows, hooks.length ? hooks.map(row) : h("tr", null, h("td", { colspan: 6, class: "muted" }, "No webhooks.")));
    const w = hooks.find((x) => x.id === shown);
    deliveriesSection.hidden = !w;
    if (w) replace(deliveriesTitle, "Deliveries to ", h("span", { class: "muted" }, w.url));
  };

  async function load() {
    try {
      hooks = await api.get("/webhooks");
      render();
    } catch (e) {
      report(e);
    }
    table.dataset.loaded = "1";
  }

  // The delivery log of the open webhook, newest first.
  const deliveryRows = h("tbody");
  const deliveries = h("table", { class: "deliveries", "aria-label": "Deliveries" },
    h("thead", null, h("tr", null, ["Seq", "Event", "State", "Attempts", "Last answer", "Next attempt", "Created", ""].map((c) => h("th", { scope: "col" }, c)))),
    deliveryRows);
  const deliveriesTitle = h("h2");
  const refresh = h("button", { type: "button", class: "refresh-deliveries", onclick: () => { load(); loadDeliveries(); } }, icon("retry"), " Refresh");
  const deliveriesSection = h("section", { class: "webhook-deliveries", hidden: true }, deliveriesTitle, refresh, deliveries);

  const deliveryRow = (hookId, d) => h("tr", { dataset: { deliveryId: d.id, state: d.state, attempts: String(d.attempts) } },
    h("td", null, String(d.seq)),
    h("td", null, d.type),
    h("td", null, h("span", { class: "delivery-state", dataset: { state: d.state } }, d.state)),
    h("td", { class: "attempts" }, String(d.attempts)),
    h("td", null, d.last_status ? `HTTP ${d.last_status}` : "", d.last_error ? h("div", { class: "muted" }, d.last_error) : null),
    h("td", null, when(d.next_attempt_at)),
    h("td", null, when(d.created_at)),
    h("td", null, h("button", { type: "button", class: "redeliver", onclick: () => act(async () => {
      await api.post(`/webhooks/${hookId}/deliveries/${d.id}/redeliver`);
      await loadDeliveries();
    }) }, "Redeliver")));

  async function loadDeliveries() {
    const id = shown;
    if (!id) return;
    delete deliveries.dataset.loaded;
    try {
      const log = await api.get(`/webhooks/${id}/deliveries`, { limit: 100 });
      if (shown !== id) return;
      replace(deliveryRows, log.length ? log.map((d) => deliveryRow(id, d)) : h("tr", null, h("td", { colspan: 8, class: "muted" }, "No deliveries yet.")));
    } catch (e) {
      report(e);
    }
    deliveries.dataset.loaded = "1";
  }

  // Creating a webhook.
  const url = h("input", { name: "url", type: "url", required: true, placeholder: "https://example.com/hook" });
  const events = h("input", { name: "events", placeholder: "task.*, message.created (empty: every event)" });
  const project = h("select", { name: "project" });
  const renderProjects = () => {
    const held = project.value;
    replace(project, h("option", { value: "" }, "All projects"),
      [...state.projects.values()].map((p) => h("option", { value: p.id, selected: p.id === held }, p.name)));
  };
  const description = h("input", { name: "description", maxlength: 500 });
  const createButton = h("button", { type: "submit" }, icon("key"), " Create webhook");
  const form = h("form", { class: "webhook-form", "aria-label": "New webhook" },
    field("URL", url), field("Events", events), field("Project", project), field("Description (optional)", description), createButton);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    secret.hide();
    const body = { url: url.value.trim() };
    const patterns = events.value.split(/[\s,]+/).filter(Boolean);
    if (patterns.length) body.events = patterns;
    if (project.value) body.project_id = project.value;
    if (description.value.trim()) body.description = description.value.trim();
    createButton.disabled = true;
    try {
      const created = await api.post("/webhooks", body);
      form.reset();
      secret.show(`The signing secret of ${created.url}`, created.secret);
      await load();
    } catch (err) {
      report(err);
    } finally {
      createButton.disabled = false;
    }
  });

  main.append(h("h1", null, "Webhooks"),
    h("p", { class: "muted" }, "Each event a webhook takes is POSTed to its URL, signed with its secret (Standard Webhooks)."),
    error, secret.el, table, deliveriesSection,
    h("h2", null, "New webhook"), form);
  renderProjects();
  load();
  const offEvents = onEvent((f) => {
    if (f.type.startsWith("webhook.")) load();
  });
  const offStore = subscribe((t) => {
    if (t.has("projects")) {
      renderProjects();
      render();
    }
  });
  return { unmount: () => { offEvents(); offStore(); } };
}
