// The files of a project: listed by name, uploaded, previewed and
// downloaded. Contents are fetched with the session's header and shown
// through blob: addresses, so the token never travels in a URL here.

import * as api from "./api.js";
import { projectBySlug, onEvent } from "./store.js";
import { h, replace, field, timeAgo, formatSize } from "./dom.js";

const TEXT_PREVIEW_BYTES = 200 * 1024;

const isText = (type) => type.startsWith("text/") || ["application/json", "application/xml"].includes(type);

export function mountFiles({ main, route }) {
  const project = projectBySlug(route.slug);
  if (!project) {
    main.append(h("h1", null, "No such project"));
    return { unmount() {} };
  }
  const base = `/projects/${project.id}/files`;
  const error = h("p", { class: "error", role: "alert" });
  const report = (e) => { error.textContent = e.message; };
  const body = h("tbody");
  const preview = h("section", { class: "file-preview", "aria-label": "Preview", "aria-live": "polite" });
  let shown = [];
  const forget = () => { for (const u of shown) URL.revokeObjectURL(u); shown = []; };
  const contentOf = async (f) => {
    const blob = await api.blob(`${base}/${encodeURIComponent(f.id)}/download`);
    const url = URL.createObjectURL(blob);
    shown.push(url);
    return { blob, url };
  };

  const download = async (f) => {
    try {
      const { url } = await contentOf(f);
      const a = h("a", { href: url, download: f.filename, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
    } catch (e) {
      report(e);
    }
  };
  const show = async (f) => {
    error.textContent = "";
    forget();
    try {
      const { blob, url } = await contentOf(f);
      let content;
      if (f.mime_type.startsWith("image/")) content = h("img", { src: url, alt: f.filename });
      else if (isText(f.mime_type)) {
        const text = await blob.slice(0, TEXT_PREVIEW_BYTES).text();
        content = h("pre", null, text);
      } else content = h("p", { class: "muted" }, `No preview for ${f.mime_type}.`);
      replace(preview, h("h2", null, f.filename), f.description ? h("p", null, f.description) : null, content);
    } catch (e) {
      report(e);
    }
  };

  const row = (f) => h("tr", { dataset: { fileId: f.id } },
    h("td", { class: "name" }, f.filename),
    h("td", null, f.description || ""),
    h("td", null, formatSize(f.size)),
    h("td", null, f.mime_type),
    h("td", null, `@${f.uploaded_by.slug} `, h("time", { datetime: f.updated_at }, timeAgo(f.updated_at))),
    h("td", null,
      h("button", { type: "button", class: "link preview", "aria-label": `Preview ${f.filename}`, onclick: () => show(f) }, "Preview"),
      h("button", { type: "button", class: "link download", "aria-label": `Download ${f.filename}`, onclick: () => download(f) }, "Download"),
      h("button", { type: "button", class: "link delete", "aria-label": `Delete ${f.filename}`,
        onclick: () => api.del(`${base}/${encodeURIComponent(f.id)}`).catch(report) }, "Delete")));
  const load = () => api.get(base, { limit: 1000 }).then((files) => replace(body, files.length
    ? files.map(row)
    : h("tr", null, h("td", { colspan: 6, class: "muted" }, "No files yet."))), report);

  const file = h("input", { type: "file", name: "file", required: true });
  const description = h("input", { name: "description", maxlength: 100000 });
  const submit = h("button", { type: "submit" }, "Upload");
  const form = h("form", { class: "inline-form", "aria-label": "Upload a file" },
    field("File", file), field("Description", description), submit);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!file.files.length) return;
    error.textContent = "";
    submit.disabled = true;
    const data = new FormData();
    if (description.value.trim()) data.append("description", description.value.trim());
    data.append("file", file.files[0], file.files[0].name);
    try {
      await api.request("POST", base, { form: data });
      form.reset();
    } catch (err) {
      report(err);
    } finally {
      submit.disabled = false;
    }
  });

  main.append(h("h1", null, `${project.name} · files`), error,
    h("table", { class: "files" },
      h("thead", null, h("tr", null, ["Name", "Description", "Size", "Type", "Updated", ""].map((c) => h("th", { scope: "col" }, c)))),
      body),
    h("h2", null, "Upload"), form, preview);
  load();
  const off = onEvent((f) => {
    if (f.type.startsWith("file.") && f.data.project_id === project.id) load();
  });
  return { unmount() { off(); forget(); } };
}
