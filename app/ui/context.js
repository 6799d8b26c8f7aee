// The context view: what a model would see next within a token budget (what the budget cut,
// the compaction summaries standing in for older events), and the session's token usage.

import { api } from "/ui/api.js";
import { failure, formatNumber, h, moment, plural } from "/ui/dom.js";
import { eventRow } from "/ui/events.js";

/** The session's token usage, as its events' `usageMetadata` added up. */
export function usageLine(usage) {
  if (!usage || !usage.totalTokenCount && !usage.promptTokenCount && !usage.candidatesTokenCount) {
    return h("span", { class: "muted" }, "none reported");
  }
  return h("span", { class: "usage" },
    `${formatNumber(usage.promptTokenCount ?? 0)} prompt · ${formatNumber(usage.candidatesTokenCount ?? 0)} candidates · `,
    h("strong", {}, `${formatNumber(usage.totalTokenCount ?? 0)} total`));
}

export function contextPanel(page) {
  const budget = h("input", { type: "number", name: "tokenBudget", min: "1", step: "1", placeholder: "no limit",
    "aria-label": "Token budget" });
  const form = h("form", { class: "filters", onsubmit: (submitted) => {
    submitted.preventDefault();
    load();
  } }, h("label", { class: "inline" }, "Token budget ", budget), h("button", { type: "submit" }, "Show"));
  const summary = h("div", { class: "context-summary", "aria-live": "polite" });
  const list = h("ol", { class: "timeline context-events", "aria-label": "Context events" });
  let loaded = false;

  async function load() {
    loaded = true;
    const tokenBudget = budget.value ? Number(budget.value) : undefined;
    summary.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    try {
      const found = await api(page.here + "/context", { tokenBudget });
      show(found, tokenBudget);
    } catch (error) {
      summary.replaceChildren(failure(error));
      list.replaceChildren();
    }
  }

  function show(found, tokenBudget) {
    const summaries = found.events.filter((event) => event.actions?.compaction);
    const lines = [h("p", {}, h("strong", {}, plural(found.events.length, "event")),
      ` · about ${plural(found.estimatedTokens, "token")} (estimated)`,
      tokenBudget ? ` of a budget of ${formatNumber(tokenBudget)}` : " (no budget)")];
    if (found.truncatedBeforeSeq) {
      lines.push(h("p", { class: "cut" }, `Cut by the budget: every event before #${found.truncatedBeforeSeq}. `,
        h("button", { type: "button", class: "jump", onclick: () => page.jumpTo(found.truncatedBeforeSeq) }, "show the cut in the timeline")));
    } else if (found.events.length) {
      lines.push(h("p", { class: "muted" }, "Nothing was cut by the budget."));
    }
    if (found.overBudget) {
      lines.push(h("p", { class: "error", role: "alert" },
        "Over budget: even the newest event, with the calls it answers, takes more than the budget."));
    }
    if (summaries.length) {
      lines.push(h("p", {}, `${plural(summaries.length, "compaction summary", "compaction summaries")} stand`,
        summaries.length === 1 ? "s" : "", " in for the events they cover (marked “summary”)."));
    }
    lines.push(h("p", { class: "muted" }, "Rewound events are left out; the model would read these, oldest first."));
    summary.replaceChildren(...lines);
    list.replaceChildren(...found.events.map((event) => {
      const row = eventRow(event, page, "context-");
      const compaction = event.actions?.compaction;
      if (compaction) {
        row.classList.add("summary");
        row.querySelector(".meta").append(h("span", { class: "tag summary" }, "summary of the events from ",
          moment(compaction.startTimestamp), " to ", moment(compaction.endTimestamp)));
      }
      return row;
    }));
  }

  return {
    element: h("div", { class: "context" },
      h("p", { class: "muted" }, "What a model would see next: the live events (rewinds applied), compaction ",
        "summaries in place of the events they cover, and the newest that fit the budget, a call never ",
        "parted from its responses. Token usage so far: ", usageLine(page.session.usage), "."),
      form, summary, list),
    /** Loads the view the first time it is shown. */
    shown() {
      if (!loaded) load();
    },
    budget,
  };
}
