// Building DOM nodes. Text is always set as text: user-written strings
// never reach an HTML parser.

// h("div", {class: "x", onclick: fn, "aria-label": "…"}, child, …)
// Children: nodes, strings (become text nodes), arrays, null/false (skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") {
        el.addEventListener(k.slice(2), v);
      } else if (k === "value" || k === "checked" || k === "selected") {
        el[k] = v;
      } else if (k === "dataset") {
        Object.assign(el.dataset, v);
      } else {
        el.setAttribute(k, v === true ? "" : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  return append(el, children);
}

let idCounter = 0;
export function uid(prefix) {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

// A labelled form field.
export function field(label, input) {
  if (!input.id) input.id = uid("f");
  return h("div", { class: "field" }, h("label", { for: input.id }, label), input);
}

export function select(options, value, attrs = {}) {
  return h("select", attrs, options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
}

export function timeAgo(ts) {
  if (!ts) return "";
  const s = Math.round((Date.now() - Date.parse(ts)) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(ts).toLocaleDateString();
}

// The time from `from` to `to` (or now), as m:ss, or as XhMM past an hour.
export function elapsedText(from, to) {
  const s = Math.max(0, Math.round(((to ? Date.parse(to) : Date.now()) - Date.parse(from)) / 1000));
  const m = Math.floor(s / 60);
  return m >= 60 ? `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}` : `${m}:${String(s % 60).padStart(2, "0")}`;
}

export function formatSize(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
