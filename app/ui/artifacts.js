// A session's artifacts (what its agents saved, and its user's `user:` artifacts): each name
// with its newest version, its versions, a preview of what is safe to show, and a download.
//
// Uploaded content is never run, nor parsed as a page, nor navigated to: its bytes are fetched
// with the page's key, as everything is; an image of a raster type is shown from a blob: URL
// in an <img> (which decodes pixels, never script), text as a <pre>'s textContent, and a
// download is a blob: URL typed application/octet-stream, saved through an <a download>. HTML,
// SVG and every other type are downloads only.

import { api, artifactContent, artifactPath } from "/ui/api.js";
import { failure, h, json, moment, scopeOf, size } from "/ui/dom.js";

const PAGE = 100;
// Types a browser decodes as pixels alone (SVG is a document, with script: not here).
const IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const TEXT_BYTES = 64 * 1024; // a text's preview: its first bytes only (a Range)
const IMAGE_BYTES = 16 * 1024 * 1024; // a larger image is a download only

/** A MIME type's essence, in lower case: `text/plain; charset=utf-8` → `text/plain`. */
function essence(mimeType) {
  return (mimeType || "").split(";")[0].trim().toLowerCase();
}

/** ADK's rewind marker: an empty `application/octet-stream` version reads as absent. */
function removed(version) {
  return version.kind === "bytes" && version.size === 0 && essence(version.mimeType) === "application/octet-stream";
}

/** What a version may be previewed as: "image", "text", or null (a download only). */
function previewAs(version) {
  if (version.kind === "reference") return null;
  const type = essence(version.mimeType);
  if (IMAGES.has(type)) return version.size <= IMAGE_BYTES ? "image" : null;
  if (type === "text/html") return null; // a page, even as text: downloaded, never shown here
  if (type.startsWith("text/") || type === "application/json") return "text";
  return null;
}

function noPreview(version) {
  if (version.kind === "reference") return "A reference to content stored elsewhere: nothing to preview.";
  if (removed(version)) return "Removed (ADK's rewind marker): it reads as absent.";
  const type = essence(version.mimeType);
  if (IMAGES.has(type)) return `An image over ${size(IMAGE_BYTES)}: download it to see it.`;
  return `No preview of ${type || "content without a type"}: only images (PNG, JPEG, GIF, WebP) and text are `
    + "shown here.";
}

const KINDS = { bytes: "bytes (an upload, or inlineData)", text: "text (a Part's text)", reference: "a reference (fileData)" };

function typeCell(version) {
  if (removed(version)) return h("span", { class: "muted" }, "removed");
  return [h("code", {}, version.mimeType || "?"), version.kind === "reference" ? h("span", { class: "tag" }, "reference") : null];
}

/** The name in the last segment of the path, as the API's download names it. */
function fileName(name) {
  return name.replace(/^user:/, "").split("/").pop() || "artifact";
}

function label(version) {
  return `${version.name} (version ${version.version})`;
}

/** A button that downloads a version: its bytes fetched with the key, saved as a file. */
function downloadButton(page, version) {
  const said = h("span", { class: "muted download-status", role: "status" });
  const button = h("button", { type: "button", class: "jump download", "aria-label": `Download ${label(version)}`,
    onclick: async () => {
      button.disabled = true;
      said.textContent = "";
      try {
        const got = await artifactContent(artifactPath(page.here, version.name), { version: version.version });
        // Typed as bytes: a file to save, whatever the browser would make of its own type.
        const address = URL.createObjectURL(new Blob([got.blob], { type: "application/octet-stream" }));
        const save = h("a", { href: address, download: fileName(version.name), hidden: true });
        document.body.append(save);
        save.click();
        save.remove();
        setTimeout(() => URL.revokeObjectURL(address), 60_000);
      } catch (error) {
        said.textContent = error.status === 303 ? ` Stored elsewhere: ${version.fileUri ?? "its URI"}.`
          : ` ${error.problem?.detail || error.message}`;
      } finally {
        button.disabled = false;
      }
    } }, "Download");
  return [button, said];
}

export function artifactsPanel(page, { counted = () => {} } = {}) {
  const rows = h("tbody");
  const table = h("table", { class: "artifact-table", "aria-label": "Artifacts", hidden: true },
    h("thead", {}, h("tr", {}, ["name", "version", "type", "size", "saved", ""].map((name) => h("th", { scope: "col" }, name)))),
    rows);
  const more = h("button", { type: "button", class: "more", hidden: true, onclick: () => load() }, "More");
  const status = h("div", { class: "artifacts-status" });
  const slot = h("div", { class: "artifact-slot" });
  let token;
  let loading = null;
  let count = 0;
  let shown = null; // the name opened below the list
  let reading = 0; // a page read before the list was read again is dropped

  async function load() {
    const mine = reading;
    more.disabled = true;
    try {
      const found = await api(page.here + "/artifacts", { pageSize: PAGE, pageToken: token });
      if (mine !== reading) return;
      rows.append(...found.artifacts.map(row));
      count += found.artifacts.length;
      token = found.nextPageToken;
      more.hidden = !token;
      table.hidden = count === 0;
      status.replaceChildren(count ? "" : h("p", { class: "muted" }, "No artifacts: nothing was saved in this session, nor as its user's."));
      counted(count, Boolean(token));
    } catch (error) {
      status.replaceChildren(failure(error));
    } finally {
      more.disabled = false;
    }
  }

  function row(version) {
    const open = h("button", { type: "button", class: "link name", dataset: { nav: "" }, onclick: () => openArtifact(version) },
      version.name);
    return h("tr", { dataset: { name: version.name, scope: scopeOf(version.name) } },
      h("th", { scope: "row" }, open),
      h("td", { class: "version" }, String(version.version)),
      h("td", { class: "type" }, typeCell(version)),
      h("td", { class: "size" }, version.kind === "reference" ? "" : size(version.size)),
      h("td", { class: "saved" }, moment(version.createTime)),
      h("td", {}, removed(version) ? null : downloadButton(page, version)));
  }

  /** An artifact below the list: its versions, the newest previewed. */
  function openArtifact(newest) {
    shown = newest.name;
    for (const one of rows.children) one.classList.toggle("selected", one.dataset.name === newest.name);
    slot.replaceChildren(artifactDetail(page, newest, () => {
      shown = null;
      slot.replaceChildren();
      for (const one of rows.children) one.classList.remove("selected");
    }));
    slot.querySelector("h2")?.scrollIntoView({ block: "nearest" });
  }

  function start() {
    loading = load();
    return loading;
  }

  return {
    element: h("div", { class: "artifacts" },
      h("p", { class: "muted" }, "What the session's agents saved, and its user's ", h("code", {}, "user:"),
        " artifacts (shared by every session of the user): the newest version of each. Images and text are ",
        "previewed; anything else, HTML and SVG included, is only downloaded."),
      status, table, more, slot),
    /** Loads the first page (once). */
    load: () => loading ?? start(),
    /** Reads the list again (the live tail said an artifact was saved or deleted). */
    reload() {
      if (!loading) return;
      reading += 1;
      rows.replaceChildren();
      token = undefined;
      count = 0;
      const reopen = shown;
      start().then(() => {
        const again = [...rows.children].find((one) => one.dataset.name === reopen);
        if (reopen && again) again.querySelector("button.name").click();
      });
    },
  };
}

/** One artifact: what its newest version is, its versions (each previewed on demand), and
 * the preview of the one chosen. */
function artifactDetail(page, newest, close) {
  const list = h("ol", { class: "artifact-versions", "aria-label": "Versions" });
  const more = h("button", { type: "button", class: "more", hidden: true, onclick: () => load() }, "More versions");
  const problems = h("div");
  const heading = h("h3", {}, "Preview");
  const preview = h("div", { class: "artifact-preview", "aria-live": "polite" });
  const items = new Map(); // version → its item
  let token;
  let asked = 0; // the preview shown is the last one asked for

  async function load() {
    more.disabled = true;
    try {
      const found = await api(artifactPath(page.here, newest.name, "/versions"), { pageSize: PAGE, pageToken: token });
      for (const version of found.versions) {
        const item = h("li", { dataset: { version: version.version } },
          h("button", { type: "button", class: "link", "aria-label": `Preview ${label(version)}`, onclick: () => show(version) },
            `version ${version.version}`),
          h("span", { class: "muted" }, " · ", removed(version) ? "removed" : [h("code", {}, version.mimeType || "?"),
            version.kind === "reference" ? "" : ` · ${size(version.size)}`], " · "), moment(version.createTime), " ",
          removed(version) ? null : downloadButton(page, version));
        items.set(version.version, item);
        list.append(item);
      }
      token = found.nextPageToken;
      more.hidden = !token;
      mark(newest.version);
    } catch (error) {
      problems.replaceChildren(failure(error));
    } finally {
      more.disabled = false;
    }
  }

  function mark(number) {
    for (const [version, item] of items) {
      if (version === number) item.setAttribute("aria-current", "true");
      else item.removeAttribute("aria-current");
    }
  }

  async function show(version) {
    const mine = ++asked;
    mark(version.version);
    heading.textContent = `Preview of version ${version.version}`;
    const as = previewAs(version);
    if (!as) {
      preview.replaceChildren(h("p", { class: "muted no-preview" }, noPreview(version), " ",
        version.kind === "reference" || removed(version) ? null : downloadButton(page, version)));
      return;
    }
    preview.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    const address = artifactPath(page.here, version.name);
    try {
      const cut = as === "text" && version.size > TEXT_BYTES;
      const got = await artifactContent(address, { version: version.version }, cut ? TEXT_BYTES : undefined);
      const shown = as === "image" ? image(version, got) : await text(version, got);
      if (mine === asked) preview.replaceChildren(...shown);
    } catch (error) {
      if (mine === asked) preview.replaceChildren(failure(error, "No preview"));
    }
  }

  function image(version, got) {
    // The record's type, one of IMAGES: the <img> decodes it as pixels or not at all. Once
    // decoded (or not), the image no longer needs its URL, nor the page the bytes.
    const address = URL.createObjectURL(new Blob([got.blob], { type: essence(version.mimeType) }));
    const shown = h("img", { class: "artifact-image", src: address, alt: label(version) });
    shown.addEventListener("load", () => URL.revokeObjectURL(address));
    shown.addEventListener("error", () => {
      URL.revokeObjectURL(address);
      if (shown.isConnected) {
        preview.replaceChildren(h("p", { class: "muted" },
          `It does not decode as ${essence(version.mimeType)}: download it to look at its bytes.`));
      }
    });
    return [shown];
  }

  async function text(version, got) {
    const bytes = got.blob.size;
    const cut = bytes < got.size;
    const charset = /charset="?([^";]+)"?/i.exec(got.type)?.[1];
    let decoder;
    try {
      decoder = new TextDecoder(charset || "utf-8");
    } catch {
      decoder = new TextDecoder("utf-8");
    }
    // A character cut in two by the range is left out (stream: the rest would follow).
    let said = decoder.decode(await got.blob.arrayBuffer(), { stream: cut });
    if (!cut && essence(version.mimeType) === "application/json") {
      try {
        said = JSON.stringify(JSON.parse(said), null, 2);
      } catch {
        // not JSON after all: shown as it is
      }
    }
    const body = h("pre", { class: "artifact-text", tabindex: "0", "aria-label": `Text of ${label(version)}` });
    body.textContent = said; // text, never markup
    return cut ? [h("p", { class: "muted cut" }, `The first ${size(bytes)} of ${size(got.size)}: download it for the whole.`), body]
      : [body];
  }

  const facts = h("dl", { class: "facts" },
    h("dt", {}, "Newest"), h("dd", {}, `version ${newest.version}, saved `, moment(newest.createTime)),
    h("dt", {}, "Saved as"), h("dd", {}, KINDS[newest.kind] ?? newest.kind),
    newest.displayName ? [h("dt", {}, "Display name"), h("dd", {}, newest.displayName)] : null,
    newest.fileUri ? [h("dt", {}, "Stored at"), h("dd", {}, h("code", {}, newest.fileUri))] : null,
    newest.sha256 ? [h("dt", {}, "SHA-256"), h("dd", {}, h("code", { title: newest.sha256 }, `${newest.sha256.slice(0, 16)}…`))] : null,
    Object.keys(newest.customMetadata || {}).length ? [h("dt", {}, "Metadata"), h("dd", {}, h("code", {}, json(newest.customMetadata)))] : null,
    scopeOf(newest.name) === "user" ? [h("dt", {}, "Scope"), h("dd", {}, "the user's: every session of the user sees it")] : null);

  const section = h("section", { class: "artifact-detail panel", "aria-label": `Artifact ${newest.name}` },
    h("div", { class: "toolbar" }, h("h2", {}, newest.name),
      h("button", { type: "button", class: "close", "aria-label": "Close the artifact", onclick: close }, "×")),
    facts,
    h("h3", {}, "Versions"), list, more, problems,
    heading, preview);
  // Its newest version is previewed at once; the list of versions loads beside it.
  load();
  show(newest);
  return section;
}
