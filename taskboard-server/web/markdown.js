// A small Markdown renderer that builds DOM nodes: paragraphs, headings,
// lists, quotes, fenced code, inline code, emphasis, links (http, https
// and mailto only) and @mentions. Nothing is ever parsed as HTML.

import { h } from "./dom.js";

const SAFE_URL = /^(https?:|mailto:)/i;

function inline(text) {
  const out = [];
  // code | bold | italic | link | mention | autolink
  const re = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))|(@[a-z0-9_-]{1,64})|(https?:\/\/[^\s<>()]+)/gi;
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const s = m[0];
    if (m[1]) out.push(h("code", null, s.slice(1, -1)));
    else if (m[2]) out.push(h("strong", null, inline(s.slice(2, -2))));
    else if (m[3]) out.push(h("em", null, inline(s.slice(1, -1))));
    else if (m[4]) {
      const close = s.indexOf("](");
      const label = s.slice(1, close);
      const url = s.slice(close + 2, -1);
      out.push(SAFE_URL.test(url) ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, label) : s);
    } else if (m[5]) out.push(h("span", { class: "mention" }, s));
    else if (m[6]) out.push(h("a", { href: s, rel: "noopener noreferrer", target: "_blank" }, s));
    last = m.index + s.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function markdown(source) {
  const root = h("div", { class: "md" });
  const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) root.appendChild(h("p", null, inline(para.join(" "))));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    if (/^```/.test(line)) {
      flush();
      const code = [];
      i += 1;
      while (i < lines.length && !/^```/.test(lines[i])) code.push(lines[i++]);
      i += 1;
      root.appendChild(h("pre", null, h("code", null, code.join("\n"))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      // Headings inside a text start at h3 so they never outrank the page's own.
      root.appendChild(h(`h${Math.min(6, heading[1].length + 2)}`, null, inline(heading[2])));
      i += 1;
      continue;
    }
    const listItem = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
    if (listItem.test(line)) {
      flush();
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && listItem.test(lines[i])) {
        const text = listItem.exec(lines[i])[2];
        const task = /^\[([ xX])\]\s+(.*)$/.exec(text);
        list.appendChild(task
          ? h("li", null, h("input", { type: "checkbox", disabled: true, checked: task[1] !== " ", "aria-label": "done" }), " ", inline(task[2]))
          : h("li", null, inline(text)));
        i += 1;
      }
      root.appendChild(list);
      continue;
    }
    if (/^>\s?/.test(line)) {
      flush();
      const quote = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) quote.push(lines[i++].replace(/^>\s?/, ""));
      root.appendChild(h("blockquote", null, inline(quote.join(" "))));
      continue;
    }
    if (line.trim() === "") flush();
    else para.push(line);
    i += 1;
  }
  flush();
  return root;
}
