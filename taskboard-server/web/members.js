// Members with their presence (each name opens the member's page,
// member.js), and the ready queue of a project.

import * as api from "./api.js";
import { state, subscribe, projectBySlug } from "./store.js";
import { h, replace, timeAgo } from "./dom.js";

export function mountMembers({ main }) {
  const body = h("tbody");
  const render = () => replace(body, [...state.members.values()].map((m) => h("tr", null,
    h("td", null, h("span", { class: `dot ${m.status}`, role: "img", "aria-label": m.status }), " ",
      h("a", { href: `#/members/${encodeURIComponent(m.slug)}` }, m.name)),
    h("td", null, `@${m.slug}`), h("td", null, m.type), h("td", null, m.role), h("td", null, m.status),
    h("td", null, h("time", { datetime: m.last_seen_at }, timeAgo(m.last_seen_at))))));
  main.append(h("h1", null, "Members"), h("table", { class: "members" },
    h("thead", null, h("tr", null, ["Name", "Slug", "Type", "Role", "Status", "Last seen"].map((c) => h("th", { scope: "col" }, c)))), body));
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
