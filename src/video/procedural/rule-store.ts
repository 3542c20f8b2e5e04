import { InputError, NotFoundError } from "../../core/errors.ts";
import { embedTexts } from "../../models/model-calls.ts";
import type { Models } from "../../models/provider.ts";
import type { ScopedStore } from "../../store/store.ts";
import type { VideoItem } from "../../store/video-records.ts";
import { type RuleInput, validateRule } from "./rules.ts";

/**
 * A user states a rule or preference for this scope: validated (a bad one is an InputError and
 * nothing is written), stored with its parsed condition, audited.
 *
 * @example
 * await addRule(scoped, models, { text: "alert when fewer than 2 bottles remain" }, newId, now);
 */
export async function addRule(
  scoped: ScopedStore,
  models: Models,
  input: RuleInput,
  newId: (prefix: string) => string,
  now: () => number,
): Promise<VideoItem> {
  const data = validateRule(input);
  const [vector] = await embedTexts(models.text, [input.text.trim()]);
  const nowMs = now();
  const rule: VideoItem = {
    id: newId("vrule"),
    kind: "rule",
    stream: null,
    entityId: null,
    startMs: nowMs,
    endMs: nowMs,
    text: input.text.trim(),
    data: { ...data },
    vector: vector ?? null,
    sources: [],
  };
  await scoped.commitVideo({
    put: [rule],
    remove: [],
    audits: [{ action: "video.rule.add", subject: rule.id, details: { text: rule.text, ...data, by: "user" } }],
  });
  return { ...rule, vector: null };
}

export async function listRules(scoped: ScopedStore): Promise<VideoItem[]> {
  return (await scoped.readVideoItems({ kinds: ["rule"] })).map((rule) => ({ ...rule, vector: null }));
}

/** Removes a rule (audited); its past notifications stay in the log. */
export async function removeRule(scoped: ScopedStore, id: string): Promise<void> {
  const [rule] = await scoped.readVideoItems({ ids: [id], kinds: ["rule"] });
  if (!rule) throw new NotFoundError("rule", id);
  await scoped.commitVideo({
    put: [],
    remove: [id],
    audits: [{ action: "video.rule.remove", subject: id, details: { text: rule.text, by: "user" } }],
  });
}

/** The notification log: every decision (sent, suppressed, cleared), newest first. */
export async function listNotifications(
  scoped: ScopedStore,
  options: {
    readonly stream?: string;
    readonly ruleId?: string;
    readonly outcome?: string;
    readonly limit?: number;
  } = {},
): Promise<VideoItem[]> {
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new InputError("limit", "1 to 10000");
  const items = await scoped.readVideoItems({
    kinds: ["notification"],
    ...(options.stream ? { stream: options.stream } : {}),
  });
  return items
    .filter((item) => !options.ruleId || item.data.rule === options.ruleId)
    .filter((item) => !options.outcome || item.data.outcome === options.outcome)
    .reverse()
    .slice(0, limit);
}
