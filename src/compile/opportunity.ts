import type { RawNode, SessionRecord } from "../store/records.ts";

/**
 * What compilation works on: one committed session (the anchor) and the history related to it,
 * read as it stood when the anchor arrived. Nothing in it comes from a question.
 */
export interface CompilationUnit {
  readonly anchor: SessionRecord;
  /** Sessions in the unit (the anchor last), oldest first. */
  readonly sessions: readonly SessionRecord[];
  /** Their raw nodes in time order. */
  readonly nodes: readonly RawNode[];
  /** The end of the anchor session (its last turn): programs are verified on the history up to it. */
  readonly asOfMs: number;
  /** Entities the scope's index knows (lower case): what programs may name. */
  readonly entities: ReadonlySet<string>;
}

/** The kinds of evidence opportunity the analyser looks for (PMMC Ω_t). */
export type OpportunityKind = "visual-attribute" | "later-naming" | "state-update" | "conflict" | "preference";

export type Modality = "text" | "image";

/** A place in the unit where a future question would need specific evidence. */
export interface Opportunity {
  readonly kind: OpportunityKind;
  /** Raw nodes the answer rests on (the anchor's turn last); a verified program must return them. */
  readonly evidence: readonly string[];
  /** Session keys of the evidence, oldest first: where a program may narrow its search to. */
  readonly sessions: readonly string[];
  /** Modalities the evidence must carry (M^req). */
  readonly modalities: readonly Modality[];
  /** Entities the evidence must mention (K^req), known to the scope. */
  readonly entities: readonly string[];
  /** Content words the evidence is about, most telling first. */
  readonly topic: readonly string[];
  /** Words of the evidence's image text (captions, OCR), when it has images. */
  readonly imageWords: readonly string[];
  readonly speaker: string | null;
}

/** Why the Doubter refused a program: what the Planner gets back to repair it. */
export interface Diagnosis {
  readonly problem: "invalid" | "failed" | "empty" | "missing-evidence" | "missing-modality" | "missing-entity";
  readonly detail: string;
}
