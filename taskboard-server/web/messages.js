// Messages (task comments and chat): a thread list that follows
// `message.new`, and a composer with @mention completion and attachments.

import * as api from "./api.js";
import { state, onEvent } from "./store.js";
import { h, replace, timeAgo, formatSize, uid } from "./dom.js";
import { markdown } from "./markdown.js";
import { memberDot } from "./board.js";
import { icon } from "./icons.js";

function attachment(a) {
  const url = api.attachmentUrl(a.id);
  if (a.mime_type.startsWith("image/") && a.mime_type !== "image/svg+xml") {
    return h("figure", { class: "attachment image" },
      h("a", { href: url, target: "_blank", rel: "noopener" }, h("img", { src: url, alt: a.filename, loading: "lazy" })),
      h("figcaption", null, h("a", { href: url, download: a.filename }, a.filename), ` · ${formatSize(a.size)}`));
  }
  return h("div", { class: "attachment" }, icon("attach", "attachment: "), h("a", { href: url, download: a.filename }, a.filename), ` · ${formatSize(a.size)}`);
}

function message(m, onReply) {
  // An imported comment is the importer's: the name its source gave is
  // shown as that, never as a member's own (docs/decisions.md 20.v).
  const imported = m.imported_author;
  const who = imported ? imported : m.author_type === "system" ? "system" : m.author ? m.author.name : "someone";
  return h("article", { class: `message ${m.author_type}${imported ? " imported" : ""}`, dataset: { id: m.id }, "aria-label": `message from ${who}` },
    h("header", null,
      m.author && !imported ? memberDot(m.author) : null,
      h("strong", null, who),
      imported
        ? h("span", { class: "muted imported-by" }, ` · imported${m.author ? ` by ${m.author.name} @${m.author.slug}` : ""}`)
        : m.author ? h("span", { class: "muted" }, ` @${m.author.slug}`) : null,
      h("time", { datetime: m.created_at, class: "muted", title: m.created_at }, ` · ${timeAgo(m.created_at)}`)),
    m.thinking ? h("details", { class: "thinking" }, h("summary", null, "Thinking"), h("pre", null, m.thinking)) : null,
    m.content ? markdown(m.content) : null,
    m.attachments.length ? h("div", { class: "attachments" }, m.attachments.map(attachment)) : null,
    onReply && !m.parent_id && m.author_type !== "system"
      ? h("button", { type: "button", class: "link reply", onclick: () => onReply(m) }, "Reply") : null);
}

// The messages of `query` ({task_id} or {chat_id}), threads under their
// first message. Returns {el, close}.
export function messageList(query, { emptyText }) {
  const el = h("div", { class: "messages", role: "log", "aria-live": "polite" });
  const byId = new Map();
  let replyOpen = null;
  const render = () => {
    const top = [...byId.values()].filter((m) => !m.parent_id || !byId.has(m.parent_id));
    top.sort((a, b) => a.created_at.localeCompare(b.created_at));
    const replies = new Map();
    for (const m of byId.values()) if (m.parent_id && byId.has(m.parent_id)) {
      if (!replies.has(m.parent_id)) replies.set(m.parent_id, []);
      replies.get(m.parent_id).push(m);
    }
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    replace(el, top.length ? top.map((m) => {
      const thread = (replies.get(m.id) || []).sort((a, b) => a.created_at.localeCompare(b.created_at));
      return h("div", { class: "thread" }, message(m, openReply),
        thread.length ? h("div", { class: "replies" }, thread.map((r) => message(r))) : null,
        replyOpen && replyOpen.parent === m.id ? replyOpen.el : null);
    }) : h("p", { class: "muted" }, emptyText));
    if (atBottom) el.scrollTop = el.scrollHeight;
  };
  const add = (m) => {
    byId.set(m.id, m);
    render();
  };
  function openReply(m) {
    const c = composer({ ...query, parent_id: m.id }, { label: `Reply to ${m.author ? m.author.name : "message"}`, onSent: (sent) => { replyOpen = null; add(sent); }, onCancel: () => { replyOpen = null; render(); } });
    replyOpen = { parent: m.id, el: c };
    render();
    c.querySelector("textarea").focus();
  }
  const key = query.task_id ? "task_id" : "chat_id";
  const off = onEvent((f) => {
    if (f.type === "message.new" && f.data[key] === query[key]) add(f.data);
  });
  api.get("/messages", { ...query, limit: 200 }).then((list) => {
    for (const m of list) byId.set(m.id, m);
    render();
  }, (e) => replace(el, h("p", { class: "error", role: "alert" }, e.message)));
  render();
  return { el, add, close: off };
}

// A textarea that proposes members' slugs after "@".
function mentionInput(textarea) {
  const listId = uid("mentions");
  const list = h("ul", { id: listId, class: "mention-list", role: "listbox", hidden: true });
  textarea.setAttribute("aria-autocomplete", "list");
  textarea.setAttribute("aria-controls", listId);
  let matches = [];
  let active = 0;
  const word = () => {
    const before = textarea.value.slice(0, textarea.selectionStart);
    const m = /(^|\s)@([a-z0-9_-]*)$/i.exec(before);
    return m ? m[2].toLowerCase() : null;
  };
  const show = () => {
    const w = word();
    matches = w === null ? [] : [...state.members.values()].filter((m) => m.is_active !== false && m.slug.startsWith(w)).slice(0, 8);
    active = 0;
    list.hidden = matches.length === 0;
    replace(list, matches.map((m, i) => h("li", { role: "option", "aria-selected": i === active ? "true" : "false", id: `${listId}-${i}`,
      onmousedown: (e) => { e.preventDefault(); pick(m); } }, `@${m.slug}`, h("span", { class: "muted" }, ` ${m.name}`))));
    if (matches.length) textarea.setAttribute("aria-activedescendant", `${listId}-0`);
    else textarea.removeAttribute("aria-activedescendant");
  };
  const pick = (m) => {
    const pos = textarea.selectionStart;
    const before = textarea.value.slice(0, pos).replace(/@([a-z0-9_-]*)$/i, `@${m.slug} `);
    textarea.value = before + textarea.value.slice(pos);
    textarea.selectionStart = textarea.selectionEnd = before.length;
    list.hidden = true;
    matches = [];
  };
  textarea.addEventListener("input", show);
  textarea.addEventListener("blur", () => { list.hidden = true; });
  textarea.addEventListener("keydown", (e) => {
    if (list.hidden || !matches.length) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      active = (active + (e.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length;
      [...list.children].forEach((li, i) => li.setAttribute("aria-selected", i === active ? "true" : "false"));
      textarea.setAttribute("aria-activedescendant", `${listId}-${active}`);
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      pick(matches[active]);
    } else if (e.key === "Escape") {
      list.hidden = true;
    }
  });
  return list;
}

// Posts to `target` ({task_id}|{chat_id}, optional parent_id).
export function composer(target, { label, onSent, onCancel }) {
  const id = uid("compose");
  const textarea = h("textarea", { id, rows: 3, placeholder: "Write… (@ to mention, Ctrl+Enter to send)" });
  const files = h("input", { type: "file", multiple: true, "aria-label": "Attach files" });
  const pending = h("ul", { class: "pending", "aria-label": "Attached files" });
  const error = h("p", { class: "error", role: "alert" });
  const send = h("button", { type: "submit" }, "Send");
  let uploaded = [];
  const showPending = () => replace(pending, uploaded.map((u) => h("li", null, icon("attach"), ` ${u.filename} (${formatSize(u.size)})`)));
  files.addEventListener("change", async () => {
    error.textContent = "";
    send.disabled = true;
    try {
      for (const f of files.files) {
        uploaded.push(await api.upload(f));
        showPending();
      }
    } catch (e) {
      error.textContent = e.message;
    } finally {
      files.value = "";
      send.disabled = false;
    }
  });
  const form = h("form", { class: "composer", "aria-label": label },
    h("label", { for: id, class: "sr-only" }, label), textarea, mentionInput(textarea), pending,
    h("div", { class: "row" }, files, h("span", { class: "spacer" }),
      onCancel ? h("button", { type: "button", class: "link", onclick: onCancel }, "Cancel") : null, send),
    error);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!textarea.value.trim() && !uploaded.length) return;
    send.disabled = true;
    error.textContent = "";
    try {
      const m = await api.post("/messages", { ...target, content: textarea.value, attachments: uploaded });
      textarea.value = "";
      uploaded = [];
      showPending();
      if (onSent) onSent(m);
    } catch (err) {
      error.textContent = err.message;
    } finally {
      send.disabled = false;
    }
  });
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });
  return form;
}
