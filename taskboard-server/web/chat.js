// The project chat.

import { projectBySlug } from "./store.js";
import { h } from "./dom.js";
import { messageList, composer } from "./messages.js";

export function mountChat({ main, route }) {
  const project = projectBySlug(route.slug);
  if (!project || !project.chat_id) {
    main.append(h("h1", null, "No chat here"));
    return { unmount() {} };
  }
  const list = messageList({ chat_id: project.chat_id }, { emptyText: "No messages yet." });
  main.append(h("h1", null, `${project.name} · chat`), h("div", { class: "chat" }, list.el,
    composer({ chat_id: project.chat_id }, { label: "New message", onSent: list.add })));
  return { unmount: list.close };
}
