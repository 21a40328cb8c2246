// Start-up, login, the frame of the page and the routes (in the address's
// fragment: #/p/<project>, #/p/<project>/t/<KEY>[/changes], #/p/<project>/chat,
// #/p/<project>/ready, #/p/<project>/files, #/members, #/agents,
// #/webhooks).

import * as api from "./api.js";
import { state, apply, notify, subscribe, setTasks, setRuns, isOpenRun, OPEN_RUN_STATES } from "./store.js";
import { h, field, replace } from "./dom.js";
import { mountBoard } from "./board.js";
import { icon } from "./icons.js";

const app = document.getElementById("app");
let stream = null;
let view = null;
let loading = 0;
let buffered = [];
let offHeader = () => {};
let loaded = false;

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "members" && parts[1]) return { name: "member", slug: parts[1] };
  if (parts[0] === "members") return { name: "members" };
  if (parts[0] === "agents") return { name: "agents" };
  if (parts[0] === "webhooks") return { name: "webhooks" };
  if (parts[0] === "p" && parts[1]) {
    if (parts[2] === "chat") return { name: "chat", slug: parts[1] };
    if (parts[2] === "ready") return { name: "ready", slug: parts[1] };
    if (parts[2] === "files") return { name: "files", slug: parts[1] };
    if (parts[2] === "t" && parts[3]) return { name: "board", slug: parts[1], key: parts[3], tab: parts[4] === "changes" ? "changes" : null };
    return { name: "board", slug: parts[1] };
  }
  return { name: "projects" };
}

// Reads whose answers replace state; events that arrive meanwhile wait
// and are applied after, in order, so the newest state wins.
export async function load(fn) {
  loading += 1;
  try {
    return await fn();
  } finally {
    loading -= 1;
    if (loading === 0) {
      const frames = buffered;
      buffered = [];
      for (const f of frames) apply(f);
    }
  }
}

function onEvent(frame) {
  if (loading > 0) buffered.push(frame);
  else apply(frame);
  if (frame.type === "link.deleted") {
    // The event does not say the link's type: read both tasks again.
    for (const id of [frame.data.source_id, frame.data.target_id]) {
      if (state.tasks.has(id)) load(() => api.get(`/tasks/${id}`).then((t) => {
        state.tasks.set(t.id, t);
        notify("tasks");
      })).catch(() => {});
    }
  }
}

// The session ends when its token expires, even on an idle page.
let expiryTimer = null;
function watchExpiry() {
  clearTimeout(expiryTimer);
  const s = api.currentSession();
  if (s && s.expires) expiryTimer = setTimeout(() => {
    api.logout();
    showLogin("Your session expired; log in again.");
  }, Math.max(0, Math.min(s.expires - Date.now(), 2 ** 31 - 1)));
}

async function loadAll() {
  await load(async () => {
    const [me, members, projects, labels, ...openRuns] = await Promise.all([
      api.get("/members/me"),
      api.get("/members"),
      api.get("/projects"),
      api.get("/labels"),
      ...OPEN_RUN_STATES.map((s) => api.get("/runs", { state: s, limit: 1000 })),
    ]);
    state.me = me;
    state.members = new Map(members.map((m) => [m.id, m]));
    state.projects = new Map(projects.map((p) => [p.id, p]));
    state.labels = new Map(labels.map((l) => [l.id, l]));
    // Runs the page held open and the server no longer lists ended
    // while the page was away: read again.
    const listed = new Set(openRuns.flat().map((r) => r.id));
    const ended = [...state.runs.values()].filter((r) => isOpenRun(r) && !listed.has(r.id));
    const reread = await Promise.all(ended.map((r) => api.get(`/runs/${r.id}`).catch(() => null)));
    setRuns([...openRuns.flat(), ...reread.filter(Boolean)]);
    const loaded = [...state.loadedProjects];
    state.loadedProjects.clear();
    state.tasks.clear();
    for (const id of loaded) await loadProjectTasks(id);
    notify("members");
    notify("projects");
    notify("labels");
    notify("tasks");
  });
  if (state.readyQueue === null) {
    try {
      await api.get("/tasks/ready", { limit: 1 });
      state.readyQueue = true;
    } catch (e) {
      // A server without the ready queue answers 404, 405, or 422 (it
      // reads `ready` as a task id): any refusal means none.
      state.readyQueue = e.status >= 400 && e.status < 500 ? false : null;
    }
    notify("projects");
  }
}

export async function loadProjectTasks(projectId) {
  const tasks = await api.get("/tasks", { project_id: projectId });
  setTasks(projectId, tasks);
}

function showLogin(message) {
  offHeader();
  if (stream) stream.stop();
  stream = null;
  if (view) view.unmount();
  view = null;
  const error = h("p", { class: "error", role: "alert" }, message || "");
  const loginInput = h("input", { name: "login", autocomplete: "username", required: true });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  const button = h("button", { type: "submit" }, "Log in");
  const form = h("form", { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Taskboard"),
    field("Slug or name", loginInput),
    field("Password", password),
    button, error);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    button.disabled = true;
    try {
      await api.login(loginInput.value.trim(), password.value);
      start();
    } catch (err) {
      error.textContent = err.message;
      button.disabled = false;
      password.focus();
    }
  });
  replace(app, h("main", { id: "main" }, form));
  loginInput.focus();
  api.authMethods().then((methods) => {
    if (!form.isConnected) return;
    if (methods.sso) {
      const sso = h("a", { class: "button sso", href: api.signInUrl(methods.sso.start) },
        `Sign in with ${methods.sso.name}`);
      form.insertBefore(h("div", { class: "sso" }, sso, h("p", { class: "or" }, "or")), form.children[1]);
    }
    if (methods.password === "owners") {
      form.insertBefore(h("p", { class: "hint" }, "Password login is for owners only."), button);
    }
  }, () => {});
}

// Back from single sign-on: the address holds a one-time login code,
// taken out of it at once and exchanged for a login.
function signInWithCode(code) {
  history.replaceState(null, "", location.pathname + location.hash);
  api.exchangeLoginCode(code).then(start, (err) => showLogin(err.message));
}

function header() {
  const s = api.currentSession();
  const conn = h("span", { id: "conn", role: "status", "aria-live": "polite" });
  const nav = h("nav", { "aria-label": "Main" });
  const renderHeader = () => {
    conn.dataset.conn = state.conn;
    replace(conn, state.conn === "live" ? [icon("live"), "Live"] : state.conn === "reconnecting" ? "Reconnecting…" : "Connecting…");
    const r = route();
    const project = r.slug ? [...state.projects.values()].find((p) => p.slug === r.slug) : null;
    const link = (href, text, current) => h("a", { href, "aria-current": current ? "page" : null }, text);
    replace(nav,
      link("#/", "Projects", r.name === "projects"),
      project && [
        link(`#/p/${encodeURIComponent(project.slug)}`, project.name, r.name === "board"),
        link(`#/p/${encodeURIComponent(project.slug)}/chat`, "Chat", r.name === "chat"),
        state.readyQueue ? link(`#/p/${encodeURIComponent(project.slug)}/ready`, "Ready", r.name === "ready") : null,
        link(`#/p/${encodeURIComponent(project.slug)}/files`, "Files", r.name === "files"),
      ],
      link("#/agents", "Agents", r.name === "agents"),
      link("#/members", "Members", r.name === "members" || r.name === "member"),
      state.me && (state.me.role === "admin" || state.me.role === "owner") ? link("#/webhooks", "Webhooks", r.name === "webhooks") : null);
  };
  offHeader = subscribe((topics) => {
    if (topics.has("conn") || topics.has("projects") || topics.has("route")) renderHeader();
  });
  renderHeader();
  const logout = h("button", { type: "button", class: "link", onclick: () => {
    api.logout();
    showLogin();
  } }, "Log out");
  return h("header", { class: "top" },
    h("a", { class: "brand", href: "#/" }, "Taskboard"), nav,
    h("span", { class: "spacer" }), conn,
    h("span", { class: "who" }, s ? `@${s.slug}` : ""), logout);
}

async function showRoute() {
  const r = route();
  const main = document.getElementById("main");
  if (!main) return;
  if (view && view.route && view.route.name === r.name && view.route.slug === r.slug && view.navigate) {
    view.route = r;
    view.navigate(r);
    notify("route");
    return;
  }
  if (view) view.unmount();
  view = null;
  main.replaceChildren();
  const ctx = { route: r, main, load, loadProjectTasks };
  if (r.name === "projects") view = mountProjects(ctx);
  else if (r.name === "board") view = mountBoard(ctx);
  else if (r.name === "chat") view = (await import("./chat.js")).mountChat(ctx);
  else if (r.name === "ready") view = (await import("./members.js")).mountReady(ctx);
  else if (r.name === "members") view = (await import("./members.js")).mountMembers(ctx);
  else if (r.name === "member") view = (await import("./member.js")).mountMember(ctx);
  else if (r.name === "agents") view = (await import("./agents.js")).mountAgents(ctx);
  else if (r.name === "webhooks") view = (await import("./webhooks.js")).mountWebhooks(ctx);
  else if (r.name === "files") view = (await import("./files.js")).mountFiles(ctx);
  if (view) view.route = r;
  notify("route");
}

function mountProjects({ main }) {
  const list = h("ul", { class: "projects", "aria-label": "Projects" });
  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const slug = h("input", { name: "slug", required: true, pattern: "[a-z0-9_-]{1,64}", maxlength: 64 });
  const error = h("p", { class: "error", role: "alert" });
  name.addEventListener("input", () => {
    if (!slug.dataset.touched) slug.value = name.value.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
  });
  slug.addEventListener("input", () => (slug.dataset.touched = "1"));
  const form = h("form", { class: "inline-form", "aria-label": "New project" },
    field("Name", name), field("Slug", slug), h("button", { type: "submit" }, "Create project"), error);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    try {
      await api.post("/projects", { name: name.value.trim(), slug: slug.value.trim() });
      name.value = "";
      slug.value = "";
      delete slug.dataset.touched;
    } catch (err) {
      error.textContent = err.message;
    }
  });
  const render = () => {
    const projects = [...state.projects.values()];
    replace(list, projects.length ? projects.map((p) =>
      h("li", null, h("a", { href: `#/p/${encodeURIComponent(p.slug)}` }, h("strong", null, p.name), " ", h("span", { class: "muted" }, p.slug)),
        p.description ? h("p", { class: "muted" }, p.description) : null))
      : h("li", { class: "muted" }, "No projects yet."));
  };
  main.append(h("h1", null, "Projects"), list, h("h2", null, "New project"), form);
  render();
  const off = subscribe((t) => t.has("projects") && render());
  return { unmount: off };
}

async function start() {
  loaded = false;
  watchExpiry();
  replace(app, header(), h("main", { id: "main", tabindex: "-1" }));
  state.conn = "connecting";
  stream = new api.EventStream({
    event: onEvent,
    hello: (frame, resumed) => {
      if (!resumed) loadAll().then(() => {
        loaded = true;
        showRoute();
      }, (e) => console.error(e));
    },
    resync: () => loadAll(),
    status: (s) => {
      state.conn = s;
      document.body.dataset.conn = s;
      notify("conn");
    },
    closed: () => {
      api.logout();
      showLogin("Your session ended; log in again.");
    },
  });
  stream.start();
}

// Anything the Content-Security-Policy refused is counted where tests see it.
document.addEventListener("securitypolicyviolation", (e) => {
  document.body.dataset.cspViolations = String(Number(document.body.dataset.cspViolations || 0) + 1);
  console.warn("refused by the content security policy:", e.violatedDirective, e.blockedURI);
});

api.setUnauthorizedHandler(() => {
  api.logout();
  showLogin("Your session expired; log in again.");
});
// Routes wait for the first load: a view needs the projects and members.
window.addEventListener("hashchange", () => {
  if (stream && loaded) showRoute();
});
const loginCode = new URLSearchParams(location.search).get("login_code");
if (loginCode) signInWithCode(loginCode);
else if (api.currentSession()) start();
else showLogin();
