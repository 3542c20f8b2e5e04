import { InputError } from "../../core/errors.ts";
import type { VideoItem } from "../../store/video-records.ts";

/**
 * Procedural memory (ReflectWorld-MM §3.5): rules and preferences a user states. A rule's condition
 * is evidence for the notifier, never a trigger: perception turns it into signals, the notifier
 * decides what to deliver. A preference is kept and searchable but produces no signal.
 */
export type Comparison = "<" | "<=" | ">" | ">=" | "=";

export type RuleCondition =
  /** How many objects of a label are in view (COCO labels of the detector: bottle, cup, car, …). */
  | { readonly kind: "count"; readonly label: string; readonly op: Comparison; readonly value: number }
  /** An entity (its id or its name) comes into view after being away. */
  | { readonly kind: "arrival"; readonly entity: string }
  | { readonly kind: "preference" };

export interface RuleInput {
  /** The user's wording; parsed into a condition when `condition` is not given. */
  readonly text: string;
  readonly condition?: RuleCondition;
  /** Only streams whose name starts with this (a source); all streams when absent. */
  readonly source?: string | null;
}

export interface RuleData {
  readonly condition: RuleCondition;
  readonly source: string | null;
  readonly status: "active" | "disabled";
}

const numbers: Record<string, number> = { no: 0, zero: 0, one: 1, a: 1, an: 1, two: 2, three: 3, four: 4, five: 5 };

/**
 * The model-free reading of a rule's wording: "fewer than 2 bottles remain", "more than three cars",
 * "no cups left", "when Ana arrives". Anything else is kept as a preference.
 */
export function parseRule(text: string): RuleCondition {
  const lower = text.toLowerCase();
  const count = (word: string) => numbers[word] ?? Number(word);
  const fewer = lower.match(/\b(?:fewer|less) than (\d+|[a-z]+) ([a-z]+)/);
  if (fewer?.[1] && fewer[2] && Number.isFinite(count(fewer[1])))
    return { kind: "count", label: singular(fewer[2]), op: "<", value: count(fewer[1]) };
  const more = lower.match(/\b(?:more|over) than (\d+|[a-z]+) ([a-z]+)/);
  if (more?.[1] && more[2] && Number.isFinite(count(more[1])))
    return { kind: "count", label: singular(more[2]), op: ">", value: count(more[1]) };
  const none = lower.match(/\bno ([a-z]+) (?:left|remain|remaining|in view)/);
  if (none?.[1]) return { kind: "count", label: singular(none[1]), op: "<", value: 1 };
  const arrival = text.match(/\bwhen (.+?) (?:arrives|appears|comes in|comes back|shows up|is seen)\b/i);
  if (arrival?.[1]) return { kind: "arrival", entity: arrival[1].trim() };
  return { kind: "preference" };
}

export function validateRule(input: RuleInput): RuleData {
  const text = input.text?.trim() ?? "";
  if (!text) throw new InputError("text", "a rule needs its wording");
  if (text.length > 1000) throw new InputError("text", "must be at most 1000 characters");
  const condition = input.condition ?? parseRule(text);
  if (condition.kind === "count") {
    if (!/^[a-z][a-z ]{0,40}$/.test(condition.label))
      throw new InputError("condition.label", "a lower-case object label");
    if (!["<", "<=", ">", ">=", "="].includes(condition.op)) throw new InputError("condition.op", "one of < <= > >= =");
    if (!Number.isInteger(condition.value) || condition.value < 0)
      throw new InputError("condition.value", "a whole number ≥ 0");
  } else if (condition.kind === "arrival") {
    if (!condition.entity?.trim()) throw new InputError("condition.entity", "an entity id or name");
  } else if (condition.kind !== "preference") {
    throw new InputError("condition.kind", "count, arrival or preference");
  }
  return { condition, source: input.source?.trim() || null, status: "active" };
}

export function ruleData(item: VideoItem): RuleData {
  return item.data as unknown as RuleData;
}

export function holds(op: Comparison, count: number, value: number): boolean {
  switch (op) {
    case "<":
      return count < value;
    case "<=":
      return count <= value;
    case ">":
      return count > value;
    case ">=":
      return count >= value;
    case "=":
      return count === value;
  }
}

/** Object labels rules ask perception to count (its focus targets). */
export function focusLabels(rules: readonly VideoItem[]): string[] {
  return [
    ...new Set(
      rules.flatMap((rule) => {
        const { condition } = ruleData(rule);
        return condition.kind === "count" ? [condition.label] : [];
      }),
    ),
  ];
}

export function ruleApplies(rule: VideoItem, stream: string): boolean {
  const data = ruleData(rule);
  return data.status === "active" && (data.source === null || stream.startsWith(data.source));
}

function singular(word: string): string {
  if (word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (/(ss|sh|ch|x)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}
