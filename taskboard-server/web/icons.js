// Small inline SVG icons drawn in the text's colour (currentColor), so
// they show the same on every machine, with or without an emoji font.
// An icon is hidden from screen readers; where it carries meaning, a
// visually hidden label says it in words.

import { h } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";

// Paths on a 16×16 grid, stroked.
const PATHS = {
  timer: ["M8 4.5V8l2.2 1.6", "M6 1.5h4", "M8 3a5.5 5.5 0 1 0 0 11A5.5 5.5 0 0 0 8 3z"],
  blocked: ["M8 1.8a6.2 6.2 0 1 0 0 12.4A6.2 6.2 0 0 0 8 1.8z", "M3.6 12.4l8.8-8.8"],
  steps: ["M2.5 2.5h11v11h-11z", "M5 8.2l2 2 4-4.4"],
  attach: ["M13 7.5l-5.3 5.3a3.2 3.2 0 0 1-4.5-4.5L8.8 2.7a2.1 2.1 0 0 1 3 3L6.2 11.3a1 1 0 0 1-1.5-1.5L9.8 4.7"],
  close: ["M3.5 3.5l9 9", "M12.5 3.5l-9 9"],
  up: ["M3.5 10l4.5-4.5 4.5 4.5"],
  down: ["M3.5 6l4.5 4.5 4.5-4.5"],
  play: ["M4.5 2.8v10.4L13 8z"],
  stop: ["M3.5 3.5h9v9h-9z"],
  retry: ["M13 3.5v3.5H9.5", "M12.6 7A5 5 0 1 0 12 10.5"],
  question: ["M8 1.8a6.2 6.2 0 1 0 0 12.4A6.2 6.2 0 0 0 8 1.8z", "M6.2 6.2a1.9 1.9 0 1 1 2.6 1.7c-.5.3-.8.7-.8 1.3v.4", "M8 11.6v.2"],
  agent: ["M3 5.5h10v7.5H3z", "M8 2.5v3", "M6 8.8v.4", "M10 8.8v.4", "M1.5 8.5v2", "M14.5 8.5v2"],
  key: ["M2.5 7.5a3 3 0 1 0 6 0a3 3 0 1 0-6 0", "M8.5 7.5H14", "M12 7.5v2.5", "M14 7.5v2"],
  branch: ["M5 5v6", "M5 2a1.5 1.5 0 1 0 0 3a1.5 1.5 0 1 0 0-3z", "M5 11a1.5 1.5 0 1 0 0 3a1.5 1.5 0 1 0 0-3z", "M11 3.5a1.5 1.5 0 1 0 0 3a1.5 1.5 0 1 0 0-3z", "M11 6.5c0 2.5-6 2-6 4.5"],
  right: ["M6 3.5l4.5 4.5-4.5 4.5"],
  live: [],
};

// An icon: <svg aria-hidden="true"> with the named drawing.
export function svgIcon(name) {
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("width", "14");
  svg.setAttribute("height", "14");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", `icon icon-${name}`);
  if (name === "live") {
    const c = document.createElementNS(NS, "circle");
    c.setAttribute("cx", "8");
    c.setAttribute("cy", "8");
    c.setAttribute("r", "4");
    c.setAttribute("fill", "currentColor");
    svg.appendChild(c);
    return svg;
  }
  for (const d of PATHS[name] || []) {
    const p = document.createElementNS(NS, "path");
    p.setAttribute("d", d);
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", "currentColor");
    p.setAttribute("stroke-width", "1.5");
    p.setAttribute("stroke-linecap", "round");
    p.setAttribute("stroke-linejoin", "round");
    svg.appendChild(p);
  }
  return svg;
}

// An icon with its meaning for screen readers: [svg, <span class=sr-only>].
export function icon(name, label) {
  return label ? [svgIcon(name), h("span", { class: "sr-only" }, label)] : svgIcon(name);
}
