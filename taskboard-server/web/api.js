// The only module that talks to the server: REST calls under /api/v1/ and
// the WebSocket event stream. The session (the JWT of a login) is kept in
// localStorage until the token expires.

const KEY = "taskboard.session";
let session = loadSession();

function tokenExpiry(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(payload));
    return typeof claims.exp === "number" ? claims.exp * 1000 : null;
  } catch {
    return null;
  }
}

function loadSession() {
  try {
    const s = JSON.parse(localStorage.getItem(KEY) || "null");
    if (s && s.token && (!s.expires || s.expires > Date.now())) return s;
  } catch {
    // An unreadable session is no session.
  }
  localStorage.removeItem(KEY);
  return null;
}

export function currentSession() {
  return session;
}

export class ApiError extends Error {
  constructor(status, detail, code) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

function keep(res) {
  session = { token: res.token, member_id: res.member_id, slug: res.slug, role: res.role, expires: tokenExpiry(res.token) };
  localStorage.setItem(KEY, JSON.stringify(session));
  return session;
}

export async function login(loginName, password) {
  return keep(await request("POST", "/auth/login", { body: { login: loginName, password }, anonymous: true }));
}

// The one-time code a single sign-on came back with, for a login.
export async function exchangeLoginCode(code) {
  return keep(await request("POST", "/auth/oidc/exchange", { body: { login_code: code }, anonymous: true }));
}

// Whether password login is open to all or to owners, and single sign-on.
export function authMethods() {
  return request("GET", "/auth/methods", { anonymous: true });
}

// Where a single sign-on starts, coming back to the board's page.
export function signInUrl(start) {
  return `${start}?return_to=${encodeURIComponent("/")}`;
}

export function logout() {
  session = null;
  localStorage.removeItem(KEY);
}

function query(params) {
  if (!params) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

// request("GET", "/tasks", {query: {project_id}}) → parsed JSON.
export async function request(method, path, { query: params, body, form, anonymous } = {}) {
  const headers = {};
  if (!anonymous && session) headers.Authorization = `Bearer ${session.token}`;
  let payload;
  if (form) payload = form;
  else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const res = await fetch(`/api/v1${path}${query(params)}`, { method, headers, body: payload });
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    if (res.status === 401 && !anonymous) onUnauthorized();
    throw new ApiError(res.status, data && data.detail, data && data.code);
  }
  return data;
}

export const get = (path, params) => request("GET", path, { query: params });
export const post = (path, body, params) => request("POST", path, { body: body ?? {}, query: params });
export const patch = (path, body) => request("PATCH", path, { body });
export const del = (path) => request("DELETE", path);

// The content of a download as a Blob, fetched with the session's header.
export async function blob(path) {
  const headers = {};
  if (session) headers.Authorization = `Bearer ${session.token}`;
  const res = await fetch(`/api/v1${path}`, { headers });
  if (!res.ok) {
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, data && data.detail, data && data.code);
  }
  return res.blob();
}

export function upload(file) {
  const form = new FormData();
  form.append("file", file, file.name);
  return request("POST", "/upload", { form });
}

// The address of an attachment; downloads are the one place where the
// token travels in a URL, because <img> and <a> cannot send headers.
export function attachmentUrl(id) {
  return `/api/v1/attachments/${encodeURIComponent(id)}/download?token=${encodeURIComponent(session ? session.token : "")}`;
}

// The event stream: hello, then events; resumes with `since` after a drop.
// handlers: {event(frame), hello(frame, resumed), resync(), status("live"|"reconnecting"), closed(code)}
export class EventStream {
  constructor(handlers) {
    this.handlers = handlers;
    this.seq = null;
    this.ws = null;
    this.stopped = false;
    this.retry = 0;
    this.timer = null;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000);
    this.ws = null;
  }

  open() {
    if (!session) return;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const since = this.seq === null ? "" : `&since=${this.seq}`;
    const ws = new WebSocket(`${proto}//${location.host}/api/v1/ws?token=${encodeURIComponent(session.token)}${since}`);
    this.ws = ws;
    const resumed = this.seq !== null;
    ws.onmessage = (m) => {
      let frame;
      try {
        frame = JSON.parse(m.data);
      } catch {
        return;
      }
      if (frame.type === "hello") {
        this.retry = 0;
        if (this.seq === null) this.seq = frame.seq;
        this.handlers.status("live");
        this.handlers.hello(frame, resumed);
        return;
      }
      if (frame.type === "resync_required") {
        this.handlers.resync();
        return;
      }
      if (typeof frame.seq === "number") this.seq = frame.seq;
      this.handlers.event(frame);
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return;
      if (e.code === 4001) {
        this.handlers.closed(e.code);
        return;
      }
      this.handlers.status("reconnecting");
      const delay = Math.min(5000, 250 * 2 ** this.retry);
      this.retry += 1;
      this.timer = setTimeout(() => this.open(), delay);
    };
  }
}
