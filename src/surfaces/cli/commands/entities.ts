import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { InputError } from "../../../core/errors.ts";
import { type EpisodicLevel, episodicLevels } from "../../../video/video-queries.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";

export const entitiesHelp = `cairn entities list | name ID NAME | enrol (--name NAME | --entity ID) PHOTO... | merge FROM INTO | split ID OBSERVATION... | facts ID
  The people seen in watched video: list them with their sightings; name one, enrol one from portrait
  photos, merge two or split observations off one. Every change is an audited decision. facts: an
  entity's semantic memory (facts with importance and edit history, recent observations).`;

export const videoHelp = `cairn video search QUERY [--level observation|trace|chapter|fact|rule|notification] [--k N] | get ID | frames ID [--save-images DIR]
cairn video rule TEXT... [--source PREFIX] | rules | unrule ID | notifications [--outcome send|suppressed|cleared] [--k N]
  Searches one level, shows an item with its time-ordered neighbours, or lists (and saves) the key
  frames behind an item with their original pixels. rule states a standing rule ("alert when fewer
  than 2 bottles remain", "tell me when Ana arrives"); notifications shows the notifier's log.`;

export async function entities(
  options: CommonOptions,
  positionals: readonly string[],
  flags: { name?: string; entity?: string },
): Promise<number> {
  const [action, ...args] = positionals;
  const scope = scopeOf(options);
  const memory = await openMemory(options, { mustExist: action === "list" || action === "name" });
  try {
    switch (action) {
      case "list": {
        const found = await memory.listEntities(scope);
        output(options, found, () =>
          found.length === 0
            ? "no entities"
            : found
                .map(
                  (entity) =>
                    `${entity.id}  ${entity.name ?? "(unnamed)"}  ${entity.observations} observation(s), ${entity.slots.face} face / ${entity.slots.appearance} appearance slot(s)${entity.slots.enrolled ? `, ${entity.slots.enrolled} enrolled` : ""}\n` +
                    entity.sightings
                      .map(
                        (sighting) =>
                          `    ${sighting.stream}: ${sighting.from} – ${sighting.to} (${sighting.observations})`,
                      )
                      .join("\n"),
                )
                .join("\n"),
        );
        return 0;
      }
      case "name": {
        const [id, ...name] = args;
        if (!id || name.length === 0) throw new InputError("name", "usage: cairn entities name ID NAME");
        const entity = await memory.nameEntity(scope, id, name.join(" "));
        output(options, entity, () => `${entity.id} is now "${entity.text}"`);
        return 0;
      }
      case "enrol": {
        if (args.length === 0) throw new InputError("photos", "give at least one portrait photo");
        const photos = args.map((path) => {
          try {
            return { origin: basename(path), data: new Uint8Array(readFileSync(path)) };
          } catch {
            throw new InputError("photos", `cannot read ${path}`);
          }
        });
        const result = await memory.enrolEntity(scope, { entityId: flags.entity, name: flags.name }, photos);
        output(options, result, () => `enrolled ${result.slots} face slot(s) for ${result.entityId}`);
        return 0;
      }
      case "merge": {
        const [from, into] = args;
        if (!from || !into) throw new InputError("merge", "usage: cairn entities merge FROM INTO");
        await memory.mergeEntities(scope, from, into);
        output(options, { from, into }, () => `merged ${from} into ${into}`);
        return 0;
      }
      case "split": {
        const [id, ...observations] = args;
        if (!id || observations.length === 0)
          throw new InputError("split", "usage: cairn entities split ID OBSERVATION...");
        const created = await memory.splitEntity(scope, id, observations);
        output(
          options,
          { entity: created },
          () => `split ${observations.length} observation(s) off ${id} into ${created}`,
        );
        return 0;
      }
      case "facts": {
        const [id] = args;
        if (!id) throw new InputError("facts", "usage: cairn entities facts ID");
        const panel = await memory.entityMemory(scope, id);
        output(options, panel, () =>
          [
            `${panel.entity.id}  ${panel.entity.name ?? "(unnamed)"}  next consolidation in ${panel.nextConsolidationIn} observation(s)`,
            ...(panel.facts.length === 0
              ? ["  no facts yet"]
              : panel.facts.map(
                  (fact) =>
                    `  ${fact.importance.toFixed(2)}  [${fact.category}] ${fact.text}  (${fact.history.map((edit) => edit.op).join(" → ")})`,
                )),
            ...panel.recent.map((item) => `  recent: ${new Date(item.startMs).toISOString()}  ${item.text}`),
          ].join("\n"),
        );
        return 0;
      }
      default:
        throw new InputError("entities", "give one of list, name, enrol, merge, split, facts");
    }
  } finally {
    await memory.close();
  }
}

export async function video(
  options: CommonOptions,
  positionals: readonly string[],
  flags: { level?: string; k?: string; saveImages?: string; source?: string; outcome?: string },
): Promise<number> {
  const [action, ...args] = positionals;
  const scope = scopeOf(options);
  // A rule may be stated before anything is watched.
  const memory = await openMemory(options, { mustExist: action !== "rule" });
  try {
    switch (action) {
      case "search": {
        const level = (flags.level ?? "trace") as EpisodicLevel;
        if (!episodicLevels.includes(level))
          throw new InputError("--level", `must be one of ${episodicLevels.join(", ")}`);
        const hits = await memory.searchVideo(scope, args.join(" "), { level, limit: flags.k ? Number(flags.k) : 10 });
        output(options, hits, () =>
          hits.length === 0
            ? "nothing found"
            : hits
                .map(
                  (hit) =>
                    `${hit.score.toFixed(3)}  ${hit.item.id}  ${new Date(hit.item.startMs).toISOString()}  ${hit.item.text}`,
                )
                .join("\n"),
        );
        return 0;
      }
      case "get": {
        const [id] = args;
        if (!id) throw new InputError("get", "usage: cairn video get ID");
        const found = await memory.getVideoItem(scope, id);
        const line = (item: typeof found.item) => `${item.id}  ${new Date(item.startMs).toISOString()}  ${item.text}`;
        output(options, found, () =>
          [
            ...found.before.map((item) => `  ${line(item)}`),
            `> ${line(found.item)}`,
            ...found.after.map((item) => `  ${line(item)}`),
          ].join("\n"),
        );
        return 0;
      }
      case "frames": {
        const [id] = args;
        if (!id) throw new InputError("frames", "usage: cairn video frames ID [--save-images DIR]");
        const frames = await memory.videoKeyFrames(scope, id);
        if (flags.saveImages) {
          for (const frame of frames) {
            const blob = await memory.getBlob(scope, frame.hash);
            await writeFile(join(flags.saveImages, `${frame.hash.slice(0, 16)}.jpg`), blob.data);
          }
        }
        output(options, frames, () =>
          frames.map((frame) => `${frame.rawNodeId}  ${frame.time}  ${frame.hash}  ${frame.caption ?? ""}`).join("\n"),
        );
        return 0;
      }
      case "rule": {
        const text = args.join(" ");
        const rule = await memory.addVideoRule(scope, { text, ...(flags.source ? { source: flags.source } : {}) });
        output(options, rule, () => `${rule.id}  ${JSON.stringify(rule.data.condition)}  ${rule.text}`);
        return 0;
      }
      case "rules": {
        const rules = await memory.listVideoRules(scope);
        output(options, rules, () =>
          rules.length === 0
            ? "no rules"
            : rules.map((rule) => `${rule.id}  ${JSON.stringify(rule.data.condition)}  ${rule.text}`).join("\n"),
        );
        return 0;
      }
      case "unrule": {
        const [id] = args;
        if (!id) throw new InputError("unrule", "usage: cairn video unrule ID");
        await memory.removeVideoRule(scope, id);
        output(options, { removed: id }, () => `removed ${id}`);
        return 0;
      }
      case "notifications": {
        const log = await memory.listVideoNotifications(scope, {
          ...(flags.outcome ? { outcome: flags.outcome } : {}),
          limit: flags.k ? Number(flags.k) : 50,
        });
        output(options, log, () =>
          log.length === 0
            ? "no notifications"
            : log
                .map(
                  (item) =>
                    `${new Date(item.startMs).toISOString()}  ${String(item.data.outcome).padEnd(10)}  ${item.text}  (${String(item.data.reason)})`,
                )
                .join("\n"),
        );
        return 0;
      }
      default:
        throw new InputError("video", "give one of search, get, frames, rule, rules, unrule, notifications");
    }
  } finally {
    await memory.close();
  }
}
