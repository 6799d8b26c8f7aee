// The operator's actions on a session, for a key that may write it (or with keys off): heal
// its orphaned calls, close it, fork it at an event, delete it. Each is confirmed in a dialog
// that says what will happen; writes send the version the page shows as If-Match, so that a
// session changed meanwhile is refused (412) rather than written blind. A refusal is shown as
// the problem's detail, in the dialog.

import { send, sessionPath } from "/ui/api.js";
import { failure, h, hashOf, plural, sessionHash, setNotice } from "/ui/dom.js";

/** A confirmation dialog: `run(form)` does the action (its answer goes to `done`). */
export function confirmAction({ title, text, fields = [], confirm, danger = false, run, done }) {
  const problem = h("div", { class: "problem" });
  const button = h("button", { type: "submit", class: danger ? "danger" : "primary" }, confirm);
  const form = h("form", { method: "dialog" }, h("h2", {}, title), text.map((line) => h("p", {}, line)),
    fields, problem,
    h("menu", {}, h("button", { type: "button", value: "cancel", onclick: () => dialog.close() }, "Cancel"), button));
  const dialog = h("dialog", { class: "confirm", "aria-label": title }, form);
  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    button.disabled = true;
    problem.replaceChildren();
    try {
      const answer = await run(form);
      dialog.close();
      done(answer);
    } catch (error) {
      problem.replaceChildren(failure(error, "Refused"));
    } finally {
      button.disabled = false;
    }
  });
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

export function forkDialog(page, seq) {
  const at = h("input", { type: "number", name: "atSeq", min: "0", value: String(seq ?? ""), required: true });
  const name = h("input", { name: "sessionId", placeholder: "generated" });
  return confirmAction({
    title: `Fork ${page.id}`,
    text: [`A new session of ${page.user} with a copy of ${page.id}'s events up to the seq below (their ids and seqs kept) `
      + "and its session state then. Nothing of this session changes."],
    fields: [h("label", {}, "At seq", at), h("label", {}, "New session id (optional)", name)],
    confirm: "Fork",
    run: () => send("POST", page.here + ":fork", { atSeq: Number(at.value), ...(name.value.trim() ? { sessionId: name.value.trim() } : {}) }),
    done: (fork) => {
      setNotice(`Forked from ${page.id} at #${at.value}.`);
      location.hash = sessionHash(page.app, page.user, fork.id);
    },
  });
}

export function actionsMenu(page) {
  const { session } = page;
  const open = session.status === "open";
  const orphans = [...page.calls.values()].filter((call) => call.status === "orphaned");
  const item = (label, action) => h("li", {}, h("button", { type: "button", role: "menuitem", onclick: () => {
    menu.open = false;
    action();
  } }, label));
  const menu = h("details", { class: "actions-menu" },
    h("summary", {}, "Actions"),
    h("ul", { role: "menu", "aria-label": "Actions" },
      open && orphans.length ? item(`Heal ${plural(orphans.length, "orphaned call")}…`, () => heal(page, orphans)) : null,
      item("Fork at an event…", () => forkDialog(page, page.selectedSeq())),
      open ? item("Close…", () => close(page)) : null,
      item("Delete…", () => remove(page))));
  // Closed when the focus leaves it (a click elsewhere, Tab past it) or on Escape.
  menu.addEventListener("focusout", (left) => menu.contains(left.relatedTarget) || (menu.open = false));
  menu.addEventListener("keydown", (pressed) => {
    if (pressed.key !== "Escape" || !menu.open) return;
    pressed.stopPropagation();
    menu.open = false;
    menu.querySelector("summary").focus();
  });
  return menu;
}

function heal(page, orphans) {
  confirmAction({
    title: `Heal ${plural(orphans.length, "orphaned call")}`,
    text: [`Answer each with an error response saying that the call was abandoned, appended to ${page.id} `
      + "by the agent that made it, so that no model is sent a call without its result:",
    orphans.map((call) => `${call.name} (${call.id}, #${call.seq})`).join(", ") + "."],
    confirm: `Heal ${plural(orphans.length, "call")}`,
    run: () => send("POST", page.here + ":heal", {}, page.version),
    done: (healed) => {
      setNotice(`Healed ${plural(healed.healed, "call")}.`);
      page.reload();
    },
  });
}

function close(page) {
  const outcome = h("select", { name: "outcome" },
    ["completed", "failed", "canceled"].map((value) => h("option", { value }, value)));
  const call = page.session.parent?.functionCallId;
  confirmAction({
    title: `Close ${page.id}`,
    text: [`It will refuse every write from then on (it can still be read, forked and deleted).`,
      call ? `It was made for call ${call} of ${page.session.parent.sessionId}: closing appends its answer there.` : ""].filter(Boolean),
    fields: [h("label", {}, "Outcome", outcome)],
    confirm: "Close session",
    run: () => send("POST", page.here + ":close", { outcome: outcome.value }, page.version),
    done: () => {
      setNotice(`Closed (${outcome.value}).`);
      page.reload();
    },
  });
}

function remove(page) {
  const count = page.span ? plural(page.span.count, "event") : "its events";
  confirmAction({
    title: `Delete ${page.id}`,
    text: [`${page.id} and ${count} will be gone for good. Its forks and children stay, and so do `
      + `${page.user}'s and the app's state.`],
    confirm: "Delete session",
    danger: true,
    run: () => send("DELETE", sessionPath(page.app, page.user, page.id), undefined, page.version),
    done: () => {
      setNotice(`Deleted ${page.id}.`);
      location.hash = hashOf("apps", page.app, "users", page.user);
    },
  });
}
