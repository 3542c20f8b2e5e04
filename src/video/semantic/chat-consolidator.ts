import { z } from "zod";
import type { ChatModel } from "../../models/provider.ts";
import type { Consolidator } from "./consolidator.ts";
import { type FactEdit, factCategories, factData } from "./facts.ts";

const editSchema = z.object({
  op: z.enum(["add", "update", "delete", "none"]),
  factId: z.string().nullable(),
  category: z.enum(["attribute", "habit", "relation", "identity"]).nullable(),
  text: z.string().nullable(),
  observations: z.array(z.string()),
  reason: z.string().nullable(),
});
type RawEdit = z.infer<typeof editSchema>;

const answerSpec = {
  name: "fact_edits",
  jsonSchema: {
    type: "object",
    properties: {
      edits: {
        type: "array",
        items: {
          type: "object",
          properties: {
            op: { type: "string", enum: ["add", "update", "delete", "none"] },
            factId: { type: ["string", "null"] },
            category: { type: ["string", "null"], enum: [...factCategories, null] },
            text: { type: ["string", "null"] },
            observations: { type: "array", items: { type: "string" } },
            reason: { type: ["string", "null"] },
          },
          required: ["op", "factId", "category", "text", "observations", "reason"],
          additionalProperties: false,
        },
      },
    },
    required: ["edits"],
    additionalProperties: false,
  },
  // Each edit is checked on its own below: one malformed edit is dropped, not the whole answer.
  parse: (value: unknown) => z.object({ edits: z.array(z.unknown()) }).parse(value),
};

const instructions = `You maintain durable facts about one entity seen by a camera: attributes, habits and relations.
Read its current facts and its earlier observations, then answer with edits:
- "add" a fact the observations support and no current fact states (category attribute, habit or relation);
- "update" a fact (its factId) the observations confirm (text null) or revise (new text);
- "delete" a fact (its factId) the observations contradict, with a reason;
- "none" when nothing changes.
Cite the ids of the observations that justify each edit. Never add, change or delete identity facts.`;

/**
 * The LLM consolidator (`semantic.consolidator: "chat"`): the profile's chat model reads the entity's
 * facts and earlier observations and answers with edits in a strict JSON schema. Malformed edits are
 * dropped with a warning; `applyFactEdits` then drops those naming no existing fact or touching an
 * identity fact, as for any consolidator.
 */
export function chatConsolidator(chat: ChatModel): Consolidator {
  return {
    id: `chat:${chat.id}`,
    async consolidate(input) {
      const facts = input.facts.map((fact) => {
        const data = factData(fact);
        return { id: fact.id, category: data.category, text: fact.text, importance: data.importance };
      });
      const observations = input.observations.map((item) => ({
        id: item.id,
        time: new Date(item.startMs).toISOString(),
        text: item.text,
        with: (input.companions.get(item.id) ?? []).map((other) => other.label),
        textRead: input.texts.get(item.id) ?? "",
      }));
      const answer = await chat.completeJson(
        [
          { role: "system", content: instructions },
          {
            role: "user",
            content: JSON.stringify({ entity: input.entity.text || input.entity.id, facts, observations }),
          },
        ],
        answerSpec,
      );
      const edits: FactEdit[] = [];
      const warnings: string[] = [];
      for (const raw of answer.edits) {
        const parsed = editSchema.safeParse(raw);
        const edit = parsed.success ? toEdit(parsed.data) : null;
        if (edit) edits.push(edit);
        else warnings.push(`consolidator edit dropped as malformed: ${JSON.stringify(raw).slice(0, 200)}`);
      }
      return { edits, warnings };
    },
  };
}

function toEdit(raw: RawEdit): FactEdit | null {
  switch (raw.op) {
    case "none":
      return { op: "none" };
    case "add":
      return raw.category && raw.text
        ? { op: "add", category: raw.category, key: null, text: raw.text, observations: raw.observations }
        : null;
    case "update":
      return raw.factId ? { op: "update", factId: raw.factId, text: raw.text, observations: raw.observations } : null;
    case "delete":
      return raw.factId
        ? { op: "delete", factId: raw.factId, reason: raw.reason ?? "contradicted", observations: raw.observations }
        : null;
  }
}
