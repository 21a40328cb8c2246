// One member's page: its access tokens (listed without their secrets,
// created with the token shown once, revoked) and "Log out everywhere".

import * as api from "./api.js";
import { state, subscribe, onEvent } from "./store.js";
import { h, replace, field, timeAgo } from "./dom.js";
import { icon } from "./icons.js";

const SCOPES = [
  ["read", "Read everything the member can see"],
  ["tasks:write", "Change tasks, steps, links and labels"],
  ["messages:write", "Post messages and comments"],
  ["files:write", "Upload and change files"],
  ["runs:write", "Start and report runs"],
  ["admin", "Manage members, projects, webhooks and tokens"],
];

const when = (ts) => (ts ? h("time", { datetime: ts, title: ts }, timeAgo(ts)) : "never");
const dateOnly = (ts) => (ts ? h("time", { datetime: ts, title: ts }, ts.slice(0, 10)) : "never");

function projectNames(ids) {
  if (!ids) return "all projects";
  return ids.map((id) => (state.projects.get(id) || { slug: id.slice(0, 8) }).slug).join(", ");
}

export function mountMember({ main, route }) {
  const member = [...state.members.values()].find((m) => m.slug === route.slug);
  if (!member) {
    main.append(h("h1", null, "Member"), h("p", { class: "error" }, `No member @${route.slug}.`));
    return { unmount: () => {} };
  }
  const me = state.me;
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };
  const tokenBox = h("div", { class: "token-box", role: "alert", hidden: true });
  const rows = h("tbody");
  const table = h("table", { class: "tokens", "aria-label": "Access tokens" },
    h("thead", null, h("tr", null, ["Name", "Scopes", "Projects", "Created", "Last used", "Expires", ""].map((c) => h("th", { scope: "col" }, c)))), rows);

  function showToken(token) {
    const code = h("code", { class: "token" }, token);
    replace(tokenBox,
      h("p", null, icon("key"), " The new access token, shown this once: copy it now."),
      h("p", null, code),
      h("button", { type: "button", onclick: () => navigator.clipboard && navigator.clipboard.writeText(token).catch(() => {}) }, "Copy"), " ",
      h("button", { type: "button", class: "link dismiss", onclick: () => { replace(tokenBox); tokenBox.hidden = true; } }, "Done"));
    tokenBox.hidden = false;
    tokenBox.scrollIntoView({ block: "nearest" });
  }

  function revokeButton(t) {
    const slot = h("span");
    const ask = () => replace(slot,
      `Revoke ${t.name}? `,
      h("button", { type: "button", class: "danger confirm-revoke", onclick: async () => {
        try {
          await api.del(`/members/${member.id}/tokens/${t.id}`);
          load();
        } catch (e) {
          report(e);
        }
      } }, "Revoke"), " ",
      h("button", { type: "button", class: "link", onclick: () => replace(slot, button) }, "Cancel"));
    const button = h("button", { type: "button", class: "revoke", onclick: ask }, "Revoke");
    replace(slot, button);
    return slot;
  }

  async function load() {
    try {
      const tokens = await api.get(`/members/${member.id}/tokens`);
      replace(rows, tokens.length ? tokens.map((t) => h("tr", { dataset: { tokenId: t.id, name: t.name } },
        h("td", { class: "name" }, t.name),
        h("td", { class: "scopes" }, t.scopes.join(", ")),
        h("td", { class: "token-projects" }, projectNames(t.project_ids)),
        h("td", null, when(t.created_at)),
        h("td", { class: "last-used" }, when(t.last_used_at)),
        h("td", null, dateOnly(t.expires_at)),
        h("td", null, revokeButton(t)))) : h("tr", null, h("td", { colspan: 7, class: "muted" }, "No access tokens.")));
      table.dataset.loaded = "1";
    } catch (e) {
      replace(rows, h("tr", null, h("td", { colspan: 7, class: "muted" }, e.message)));
      table.dataset.loaded = "1";
    }
  }

  // Creating a token.
  const name = h("input", { name: "name", required: true, maxlength: 100, placeholder: "What it is for" });
  const scopeBoxes = SCOPES.map(([s, text]) => h("label", { class: "check" },
    h("input", { type: "checkbox", name: "scope", value: s, checked: s === "read" }), ` ${s} `, h("span", { class: "muted" }, text)));
  const projectBoxes = [...state.projects.values()].map((p) => h("label", { class: "check" },
    h("input", { type: "checkbox", name: "project", value: p.id }), ` ${p.name}`));
  const expires = h("input", { name: "expires", type: "date" });
  const createButton = h("button", { type: "submit" }, icon("key"), " Create token");
  const form = h("form", { class: "token-form", "aria-label": "New access token" },
    field("Name", name),
    h("fieldset", null, h("legend", null, "Scopes"), scopeBoxes),
    h("fieldset", null, h("legend", null, "Projects (none checked: every project)"), projectBoxes),
    field("Expires (optional)", expires),
    createButton);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    const checked = (boxes) => boxes.map((l) => l.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    const body = { name: name.value.trim(), scopes: checked(scopeBoxes) };
    const projects = checked(projectBoxes);
    if (projects.length) body.project_ids = projects;
    if (expires.value) body.expires_at = new Date(`${expires.value}T23:59:59`).toISOString();
    createButton.disabled = true;
    try {
      const created = await api.post(`/members/${member.id}/tokens`, body);
      form.reset();
      scopeBoxes[0].querySelector("input").checked = true;
      showToken(created.token);
      load();
    } catch (err) {
      report(err);
    } finally {
      createButton.disabled = false;
    }
  });

  // Ending every login: the member itself, or an owner for anyone.
  const mayLogOut = member.type !== "agent" && me && (me.id === member.id || me.role === "owner");
  const logoutButton = mayLogOut && h("button", { type: "button", class: "danger logout-everywhere", onclick: async () => {
    error.textContent = "";
    try {
      await api.post(`/members/${member.id}/logout-everywhere`);
      logoutNote.textContent = `Every login of @${member.slug} has ended; access tokens stay until revoked.`;
    } catch (e) {
      report(e);
    }
  } }, "Log out everywhere");
  const logoutNote = h("p", { class: "muted logout-note", role: "status" });

  main.append(
    h("h1", null, member.name, " ", h("span", { class: "muted" }, `@${member.slug}`)),
    h("p", { class: "muted" }, `${member.type}, ${member.role}`),
    error,
    mayLogOut ? h("section", { class: "sessions" }, h("h2", null, "Logins"),
      h("p", { class: "muted" }, "End every login of this member, on every device and browser."), logoutButton, logoutNote) : null,
    h("section", { class: "access-tokens" }, h("h2", null, "Access tokens"),
      h("p", { class: "muted" }, "Tokens act as this member with only their scopes, in their projects only when restricted."),
      tokenBox, table, h("h3", null, "New access token"), form));
  load();
  const offEvents = onEvent((f) => {
    if ((f.type === "token.created" || f.type === "token.revoked") && f.data.member_id === member.id) load();
  });
  const offStore = subscribe((t) => t.has("projects") && load());
  return { unmount: () => { offEvents(); offStore(); } };
}
