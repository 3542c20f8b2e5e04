/**
 * The question bank panel (PMMC, issue 12): each banked program with the question it was compiled
 * for, its DAG of operators, how the Doubter verified it, and the raw nodes its verification rests
 * on (links into the timeline); below, the programs retired lately, with why. Read-only.
 */
import { describeError } from "./api.js";
import { h, replace, setStatus, timeElement } from "./dom.js";
import { idLink } from "./render.js";

/** Step fields drawn otherwise than as arguments: the id, the operator, and the inputs (edges of the DAG). */
const structural = new Set(["id", "op", "input", "inputs"]);

export function createBank(api) {
  const section = document.getElementById("bank");
  const status = document.getElementById("bank-status");
  const list = document.getElementById("bank-programs");
  const retired = document.getElementById("bank-retired");

  async function load() {
    try {
      const bank = await api.bank();
      const empty = bank.programs.length === 0 && bank.retired.length === 0;
      section.hidden = empty;
      if (empty) return;
      setStatus(
        status,
        `${bank.programs.length} active program${bank.programs.length === 1 ? "" : "s"}, ${bank.retired.length} retired lately.`,
      );
      replace(list, bank.programs.map(programItem));
      replace(
        retired,
        bank.retired.length === 0
          ? h("li", { class: "muted" }, "None retired lately.")
          : bank.retired.map((entry) =>
              h(
                "li",
                { class: "retired-program", dataset: { program: entry.id } },
                h("span", { class: "badge" }, entry.status),
                " ",
                timeElement(entry.time),
                " ",
                entry.question ?? h("code", {}, entry.id),
                h("span", { class: "muted" }, ` — ${entry.reason}${entry.detail ? `: ${entry.detail}` : ""}`),
              ),
            ),
      );
    } catch (error) {
      section.hidden = false;
      setStatus(status, describeError(error), "error");
    }
  }

  return { load };
}

function programItem(entry) {
  const steps = Array.isArray(entry.program.steps) ? entry.program.steps : [];
  const attempts = Array.isArray(entry.verification.attempts) ? entry.verification.attempts : [];
  const verified = entry.verification.verified !== false;
  return h(
    "li",
    { class: "bank-program", dataset: { program: entry.id, status: entry.status } },
    h(
      "p",
      { class: "bank-question" },
      h("span", { class: `badge ${entry.status === "active" ? "badge-on" : ""}` }, entry.status),
      " ",
      h("span", { class: "badge" }, entry.kind),
      " ",
      entry.question,
    ),
    h(
      "ol",
      { class: "bank-dag", "aria-label": "Program steps" },
      steps.map((step) =>
        h(
          "li",
          { class: "bank-step", dataset: { step: step.id, op: step.op } },
          h("code", {}, step.id),
          " ",
          h("strong", {}, step.op),
          inputsOf(step).length > 0 ? ` ← ${inputsOf(step).join(", ")}` : "",
          argumentsOf(step),
          step.id === entry.program.output ? h("span", { class: "muted" }, " (output)") : "",
        ),
      ),
    ),
    h(
      "p",
      { class: "bank-verification" },
      verified ? "Verified" : "Not verified (the Doubter was off)",
      ` by ${entry.verification.roles ?? "?"} in ${attempts.length} attempt${attempts.length === 1 ? "" : "s"}`,
      entry.verification.asOfMs
        ? [" on the history as of ", timeElement(new Date(entry.verification.asOfMs).toISOString())]
        : "",
      typeof entry.verification.reverifiedMs === "number"
        ? [
            "; re-verified ",
            timeElement(new Date(entry.verification.reverifiedMs).toISOString()),
            " after an update superseded its evidence",
          ]
        : "",
      attempts.some((attempt) => attempt.diagnosis)
        ? h(
            "span",
            { class: "muted" },
            ` — repaired after: ${attempts
              .filter((attempt) => attempt.diagnosis)
              .map((attempt) => `${attempt.diagnosis.problem}: ${attempt.diagnosis.detail}`)
              .join("; ")}`,
          )
        : "",
    ),
    h(
      "p",
      { class: "bank-evidence" },
      "Rests on ",
      entry.evidence.map((id, index) => [index > 0 ? ", " : "", idLink(id, `turn ${index + 1}`)]),
      h("span", { class: "muted" }, ` · sessions ${entry.sessions.join(", ")}`),
    ),
  );
}

function inputsOf(step) {
  if (Array.isArray(step.inputs)) return step.inputs;
  return typeof step.input === "string" ? [step.input] : [];
}

function argumentsOf(step) {
  const shown = Object.entries(step)
    .filter(([key]) => !structural.has(key))
    .map(([key, value]) => `${key}: ${typeof value === "string" ? `“${value}”` : JSON.stringify(value)}`);
  return shown.length > 0 ? h("span", { class: "muted" }, ` (${shown.join(", ")})`) : "";
}
