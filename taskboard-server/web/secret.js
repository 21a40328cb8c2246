// A box that shows a secret once (a token, a password, a signing
// secret): the caller says what it is, the box offers to copy it, and
// "Done" takes it off the page for good.

import { h, replace } from "./dom.js";
import { icon } from "./icons.js";

export function secretBox() {
  const box = h("div", { class: "token-box secret-box", role: "alert", hidden: true });
  const hide = () => {
    replace(box);
    box.hidden = true;
  };
  const show = (text, secret) => {
    replace(box,
      h("p", null, icon("key"), ` ${text}, shown this once: copy it now.`),
      h("p", null, h("code", { class: "secret" }, secret)),
      h("button", { type: "button", onclick: () => navigator.clipboard && navigator.clipboard.writeText(secret).catch(() => {}) }, "Copy"), " ",
      h("button", { type: "button", class: "link dismiss", onclick: hide }, "Done"));
    box.hidden = false;
    box.scrollIntoView({ block: "nearest" });
  };
  return { el: box, show, hide };
}

// A password of 20 characters from the browser's random source.
export function generatePassword() {
  const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
  const bytes = crypto.getRandomValues(new Uint8Array(20));
  // 232 is the largest multiple of the alphabet's 58 letters below 256,
  // so every letter is as likely; a byte above it is drawn again.
  let out = "";
  for (let i = 0; i < bytes.length; i += 1) {
    let b = bytes[i];
    while (b >= 232) b = crypto.getRandomValues(new Uint8Array(1))[0];
    out += alphabet[b % alphabet.length];
  }
  return out;
}
