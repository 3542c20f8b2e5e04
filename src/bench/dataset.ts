import type { SessionInput } from "../ingest/session-input.ts";

/**
 * A benchmark dataset as the harness replays it: histories (one memory each) whose sessions go
 * through the normal write path in time order, and questions asked only after the last session.
 * Gold evidence is expressed in the dataset's own ids; each turn carries its dataset id(s) in
 * `metadata.datasetTurnId` / `metadata.datasetImageIds`, which is how gold maps to raw-node ids.
 */
export interface BenchDataset {
  readonly name: string;
  readonly histories: readonly BenchHistory[];
  /** Data problems found while loading (unresolvable gold ids, split evidence strings...), counted. */
  readonly notes: readonly string[];
}

export interface BenchHistory {
  readonly id: string;
  /** Sessions in time order. Image paths are relative to `baseDir`. */
  readonly sessions: readonly SessionInput[];
  readonly baseDir?: string;
  readonly questions: readonly BenchQuestion[];
}

export interface BenchQuestion {
  readonly id: string;
  readonly text: string;
  /** Absolute path of a query image, when the question comes with one. */
  readonly imagePath?: string;
  /** Category or task type, as the dataset names it. */
  readonly category: string;
  readonly answer?: string;
  readonly gold: {
    /** Dataset turn ids (e.g. LoCoMo `D3:7`). */
    readonly turns: readonly string[];
    readonly sessions: readonly string[];
    /** Dataset image ids (e.g. Mem-Gallery `D2:IMG_3`). */
    readonly images: readonly string[];
  };
}
