import type { LabelledEntry, LabelledQuery } from "./bank-calibration.ts";
import type { Opportunity, OpportunityKind } from "./opportunity.ts";
import { ruleRoles, templateQuestions } from "./rule-roles.ts";

/** The labelled check's file (test/fixtures/pmmc-paraphrases.json): hand-written, no benchmark question. */
export interface LabelledSet {
  readonly opportunities: readonly {
    readonly id: string;
    readonly kind: OpportunityKind;
    readonly topic: readonly string[];
    readonly imageWords: readonly string[];
    readonly entities: readonly string[];
    readonly speaker: string | null;
    readonly paraphrases: readonly string[];
  }[];
  readonly unrelated: readonly string[];
}

/**
 * The bank the model-free roles would compile from the labelled opportunities (every template wording,
 * each with its first plan's search words) and the labelled queries, embedded by `embed`.
 */
export async function labelledBank(
  set: LabelledSet,
  embed: (texts: string[]) => Promise<(Float32Array | undefined)[]>,
  termsOf: (program: unknown) => string[],
  questionsPerOpportunity = Number.POSITIVE_INFINITY,
): Promise<{ bank: LabelledEntry[]; queries: LabelledQuery[] }> {
  const entries: { owner: string; question: string; terms: string[] }[] = [];
  for (const labelled of set.opportunities) {
    const opportunity: Opportunity = {
      kind: labelled.kind,
      evidence: [labelled.id],
      sessions: ["s1"],
      modalities: labelled.imageWords.length > 0 ? ["text", "image"] : ["text"],
      entities: labelled.entities,
      topic: labelled.topic,
      imageWords: labelled.imageWords,
      speaker: labelled.speaker,
    };
    for (const question of templateQuestions(opportunity).slice(0, questionsPerOpportunity)) {
      const program = await ruleRoles.plan({ question, opportunity, unit: undefined as never, attempt: 0 });
      entries.push({ owner: labelled.id, question, terms: termsOf(program) });
    }
  }
  const asked = [
    ...set.opportunities.flatMap((labelled) => labelled.paraphrases.map((text) => ({ text, owner: labelled.id }))),
    ...set.unrelated.map((text) => ({ text, owner: null })),
  ];
  const vectors = await embed([...entries.map((entry) => entry.question), ...asked.map((query) => query.text)]);
  const bank = entries.map((entry, index) => ({
    id: `q${index}`,
    owner: entry.owner,
    question: entry.question,
    terms: entry.terms,
    vector: vectors[index] ?? null,
    imageVector: null,
  }));
  const queries = asked.map((query, index) => ({ ...query, vector: vectors[entries.length + index] }));
  return { bank, queries };
}
