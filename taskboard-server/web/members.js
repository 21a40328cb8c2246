// Members with their presence (each name opens the member's page,
// member.js), and the ready queue of a project. Admins and owners also
// create members, change roles and set passwords here; owners deactivate.
// The API decides who may do what: a refusal's detail is shown.

import * as api from "./api.js";
import { state, subscribe, notify, projectBySlug } from "./store.js";
import { h, append, replace, field, select, timeAgo } from "./dom.js";
import { icon } from "./icons.js";
import { secretBox, generatePassword } from "./secret.js";

const ROLES = ["member", "admin", "owner"];

export function mountMembers({ main }) {
  const me = state.me;
  const manages = !!me && (me.role === "admin" || me.role === "owner");
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };
  const secret = secretBox();
  const confirming = new Set();
  const body = h("tbody");
  const active = () => [...state.members.values()].filter((m) => m.is_active !== false);

  const roleCell = (m) => {
    if (!manages || m.type === "bridge") return m.role;
    const choice = select(ROLES.map((r) => [r, r]), m.role, { name: "role", "aria-label": `Role of @${m.slug}` });
    choice.addEventListener("change", async () => {
      error.textContent = "";
      try {
        const changed = await api.patch(`/members/${m.id}`, { role: choice.value });
        state.members.set(changed.id, { ...(state.members.get(changed.id) || {}), ...changed });
        notify("members");
      } catch (e) {
        choice.value = m.role;
        report(e);
      }
    });
    return choice;
  };

  // Deactivating is the owners' (the API refuses anyone else).
  const actionsCell = (m) => {
    if (!me || me.role !== "owner") return null;
    if (!confirming.has(m.id)) {
      return h("button", { type: "button", class: "deactivate", onclick: () => { confirming.add(m.id); render(); } }, "Deactivate");
    }
    return [`Deactivate @${m.slug}? `,
      h("button", { type: "button", class: "danger confirm-deactivate", onclick: async () => {
        error.textContent = "";
        confirming.delete(m.id);
        try {
          await api.del(`/members/${m.id}`);
          const held = state.members.get(m.id);
          if (held) state.members.set(m.id, { ...held, is_active: false });
          notify("members");
        } catch (e) {
          report(e);
          render();
        }
      } }, "Deactivate"), " ",
      h("button", { type: "button", class: "link", onclick: () => { confirming.delete(m.id); render(); } }, "Cancel")];
  };

  const render = () => {
    replace(body, active().map((m) => h("tr", { dataset: { slug: m.slug, memberId: m.id, role: m.role } },
      h("td", null, h("span", { class: `dot ${m.status}`, role: "img", "aria-label": m.status }), " ",
        h("a", { href: `#/members/${encodeURIComponent(m.slug)}` }, m.name)),
      h("td", null, `@${m.slug}`), h("td", null, m.type), h("td", { class: "role" }, roleCell(m)), h("td", null, m.status),
      h("td", null, h("time", { datetime: m.last_seen_at }, timeAgo(m.last_seen_at))),
      manages ? h("td", { class: "actions" }, actionsCell(m)) : null)));
    if (manages) renderPasswordChoices();
  };

  // Creating a member: an agent's token, or a human's password, shown once.
  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const slug = h("input", { name: "slug", required: true, pattern: "[a-z0-9_-]{1,64}", maxlength: 64 });
  name.addEventListener("input", () => {
    if (!slug.dataset.touched) slug.value = name.value.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
  });
  slug.addEventListener("input", () => (slug.dataset.touched = "1"));
  const type = select([["human", "human"], ["agent", "agent"]], "human", { name: "type" });
  const role = select(ROLES.map((r) => [r, r]), "member", { name: "role" });
  const createButton = h("button", { type: "submit" }, "Create member");
  const createForm = h("form", { class: "inline-form member-form", "aria-label": "New member" },
    field("Name", name), field("Slug", slug), field("Type", type), field("Role", role), createButton);
  createForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    secret.hide();
    createButton.disabled = true;
    try {
      const created = await api.post("/members", { name: name.value.trim(), slug: slug.value.trim(), type: type.value, role: role.value });
      createForm.reset();
      delete slug.dataset.touched;
      if (created.token) {
        secret.show(`The token of @${created.slug}`, created.token);
      } else if (created.type === "human") {
        const password = generatePassword();
        try {
          await api.request("PUT", `/members/${created.id}/password`, { body: { password } });
          secret.show(`The password of @${created.slug}`, password);
        } catch (err) {
          report(new Error(`@${created.slug} was created without a password: ${err.message}`));
        }
      }
    } catch (err) {
      report(err);
    } finally {
      createButton.disabled = false;
    }
  });

  // A human's password: typed, or generated; shown once when set.
  const who = h("select", { name: "member" });
  const renderPasswordChoices = () => {
    const held = who.value;
    const humans = active().filter((m) => m.type === "human");
    replace(who, humans.map((m) => h("option", { value: m.id, selected: m.id === held }, `@${m.slug}`)));
  };
  const password = h("input", { name: "password", type: "text", autocomplete: "new-password", minlength: 8, maxlength: 1024, required: true });
  const generate = h("button", { type: "button", class: "generate", onclick: () => { password.value = generatePassword(); } }, "Generate");
  const passwordButton = h("button", { type: "submit" }, icon("key"), " Set password");
  const passwordForm = h("form", { class: "inline-form password-form", "aria-label": "Set a password" },
    field("Member", who), field("New password", password), generate, passwordButton);
  passwordForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    secret.hide();
    const m = state.members.get(who.value);
    if (!m) return;
    passwordButton.disabled = true;
    try {
      const value = password.value;
      await api.request("PUT", `/members/${m.id}/password`, { body: { password: value } });
      password.value = "";
      secret.show(`The new password of @${m.slug}`, value);
    } catch (err) {
      report(err);
    } finally {
      passwordButton.disabled = false;
    }
  });

  const columns = ["Name", "Slug", "Type", "Role", "Status", "Last seen"];
  if (manages) columns.push("");
  append(main, [h("h1", null, "Members"), manages ? [error, secret.el] : null, h("table", { class: "members" },
    h("thead", null, h("tr", null, columns.map((c) => h("th", { scope: "col" }, c)))), body),
  manages ? h("section", { class: "manage-members" },
    h("h2", null, "New member"),
    h("p", { class: "muted" }, "An agent gets a token, a person a generated password; either is shown once."),
    createForm,
    h("h2", null, "Set a password"),
    h("p", { class: "muted" }, "Every login of the member ends; an admin may set the password of a person whose role is member."),
    passwordForm) : null]);
  render();
  return { unmount: subscribe((t) => t.has("members") && render()) };
}

export function mountReady({ main, route }) {
  const project = projectBySlug(route.slug);
  const list = h("ol", { class: "ready" });
  const load = () => api.get("/tasks/ready", { project_id: project && project.id, limit: 100 }).then((tasks) => {
    replace(list, tasks.length ? tasks.map((t) => h("li", { dataset: { title: t.title } }, h("a", { href: `#/p/${encodeURIComponent(t.project.slug)}/t/${encodeURIComponent(t.key)}` }, t.key),
      ` ${t.title} `, h("span", { class: `prio ${t.priority}` }, t.priority))) : h("li", { class: "muted" }, "Nothing is ready."));
    list.dataset.loaded = "1";
  }, (e) => replace(list, h("li", { class: "error" }, e.message)));
  main.append(h("h1", null, "Ready to take"), h("p", { class: "muted" }, "Unassigned tasks whose dependencies are done, in the order agents get them."), list);
  load();
  return { unmount: subscribe((t) => t.has("tasks") && load()) };
}
