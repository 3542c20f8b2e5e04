import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { ConflictError, NotFoundError } from "../core/errors.ts";
import type { Scope } from "../core/scope.ts";
import { keyedHashScheme } from "./audit-redaction.ts";
import type { IndexEntry } from "./index-records.ts";
import type {
  AuditEvent,
  BlobWrite,
  RawNode,
  RawNodeWrite,
  SessionRecord,
  SessionWrite,
  VectorSpace,
} from "./records.ts";
import type { ScopedStore, SessionPart, Store } from "./store.ts";

/**
 * Copies every scope of one store into another through the seam alone (`cairn migrate`: SQLite to
 * Postgres and back), keeping ids, times, vectors, the parts sessions were appended in, the question
 * bank, video memory, index and audit log, then compares the two record by record. A copy
 * interrupted part way can be run again: sessions already there are skipped, programs and video
 * items already there are kept, and each scope's index and audit log are replaced as a whole at its end.
 *
 * The audit log's keyed hashes (what a forget leaves of the keys and ids it erased, decision 007)
 * are copied as they are: the values they hash are gone, so they cannot be hashed again under the
 * target's secret. With `carryAuditSecret` the source's secret goes with them, so they still match;
 * without it they are kept but only the source's secret matches them (`foreignKeyedEvents` counts them).
 */

export interface TransferCounts {
  scopes: number;
  sessions: number;
  /** Sessions the target already held (a resumed copy). */
  skipped: number;
  rawNodes: number;
  blobs: number;
  entries: number;
  auditEvents: number;
  /** Parts of appended sessions (`appendTurns`), kept so a retried append is still a duplicate. */
  sessionParts: number;
  /** Question-bank programs (PMMC) copied; those the target already held are not counted. */
  programs: number;
  /** Video memory items (entities, slots, observations, traces, chapters). */
  videoItems: number;
  /** The notifier's records (one per rule and source), so a watch restarted on the copy keeps its cooldown. */
  notifierRules: number;
  /** Whether the source's audit secret(s) went with the audit log. */
  auditSecretCarried: boolean;
  /**
   * Audit events copied holding keyed hashes made under a secret the target does not use (0 when it
   * was carried): they stay as they are, but a forgotten key can no longer be matched against them.
   */
  foreignKeyedEvents: number;
}

export interface CopyOptions {
  /** Make the source's audit secret the target's, so the copied hashes keep matching (see above). */
  readonly carryAuditSecret?: boolean;
  /** Called after each session. */
  readonly onProgress?: (progress: TransferProgress) => void;
  /**
   * The text lexical search reads for each raw node of one session (in turn order), as the write path
   * derives it (`store/index-text.ts`): stores keep no copy of it, so a copy derives it again. Without
   * it a copy indexes each raw node's own text, and searches differ from the source's.
   */
  readonly indexTexts?: (nodes: readonly RawNode[]) => readonly string[];
}

export interface TransferProgress {
  /** The scope being copied. */
  readonly scope: Scope;
  /** Sessions copied (or found there already) so far, over every scope. */
  readonly sessionsDone: number;
  /** Sessions of the whole source. */
  readonly sessions: number;
}

/** Copies every scope of `from` into `to`. */
export async function copyStore(from: Store, to: Store, options: CopyOptions = {}): Promise<TransferCounts> {
  const spaces = await from.vectorSpaces();
  const scopes = await from.listScopes();
  const counts: TransferCounts = {
    scopes: scopes.length,
    sessions: 0,
    skipped: 0,
    rawNodes: 0,
    blobs: 0,
    entries: 0,
    auditEvents: 0,
    sessionParts: 0,
    programs: 0,
    videoItems: 0,
    notifierRules: 0,
    auditSecretCarried: false,
    foreignKeyedEvents: 0,
  };
  // Restoring a scope's index at its end would strand sessions only the target holds: refuse
  // before anything is written.
  let total = 0;
  for (const scope of scopes) {
    const sessions = await from.forScope(scope).readSessions({});
    total += sessions.length;
    const known = new Set(sessions.map((session) => session.id));
    const extra = (await to.forScope(scope).readSessions({})).filter((session) => !known.has(session.id));
    if (extra.length > 0) {
      throw new ConflictError(
        `scope ${scopeLabel(scope)} of the target holds ${extra.length} session(s) the source does not (e.g. ${extra[0]?.key}): copy into an empty store`,
      );
    }
  }
  const tenants = [...new Set(scopes.map((scope) => scope.tenant))].sort();
  const secrets = new Map<string, Uint8Array | null>();
  for (const tenant of tenants) secrets.set(tenant, await from.readAuditSecret(tenant));
  if (options.carryAuditSecret) {
    await carrySecrets(to, secrets);
    counts.auditSecretCarried = true;
  }
  let done = 0;
  for (const scope of scopes) {
    const matching = await sameSecret(secrets.get(scope.tenant) ?? null, to, scope.tenant);
    await copyScope(from.forScope(scope), to.forScope(scope), spaces, counts, matching, options.indexTexts, () => {
      done += 1;
      options.onProgress?.({ scope, sessionsDone: done, sessions: total });
    });
  }
  return counts;
}

/**
 * Adopts each tenant's secret in the target, refusing before any is written when the target keeps
 * one secret for the whole store and the source's tenants hold different ones.
 */
async function carrySecrets(to: Store, secrets: ReadonlyMap<string, Uint8Array | null>): Promise<void> {
  const present = [...secrets].flatMap(([tenant, secret]) => (secret ? [{ tenant, secret }] : []));
  if (to.auditSecretPer === "store") {
    const distinct = new Set(present.map(({ secret }) => Buffer.from(secret).toString("hex")));
    if (distinct.size > 1) {
      throw new ConflictError(
        `the source's tenants (${present.map(({ tenant }) => tenant).join(", ")}) hash under ${distinct.size} different audit secrets and the target keeps one for the whole store: migrate without carrying the secret, or one tenant at a time into separate stores`,
      );
    }
  }
  for (const { tenant, secret } of present) await to.adoptAuditSecret(tenant, secret);
}

async function sameSecret(source: Uint8Array | null, to: Store, tenant: string): Promise<boolean> {
  const target = await to.readAuditSecret(tenant);
  return source !== null && target !== null && Buffer.from(source).equals(target);
}

async function copyScope(
  source: ScopedStore,
  target: ScopedStore,
  spaces: readonly VectorSpace[],
  counts: TransferCounts,
  secretMatches: boolean,
  indexTexts: CopyOptions["indexTexts"],
  onSession: () => void,
): Promise<void> {
  const sessions = await source.readSessions({});
  const parts = await source.readSessionParts(sessions.map((session) => session.id));
  const blobsSeen = new Set<string>();
  for (const session of sessions) {
    const nodes = await source.readRawNodes({ sessionId: session.id });
    const write = await sessionWriteOf(source, session, nodes, spaces, indexTexts?.(nodes));
    const sessionParts: readonly SessionPart[] = parts.get(session.id) ?? [];
    const { imported } = await target.importSession(write, {
      sessionId: session.id,
      createdMs: Date.parse(session.createdAt),
      rawNodeIds: nodes.map((node) => node.id),
      parts: sessionParts,
    });
    if (imported) counts.sessions += 1;
    else counts.skipped += 1;
    counts.rawNodes += nodes.length;
    counts.sessionParts += sessionParts.length;
    for (const blob of write.blobs) blobsSeen.add(blob.hash);
    onSession();
  }
  counts.blobs += blobsSeen.size;
  // Programs and video items name raw nodes, so they follow the sessions. Their audit events are
  // replaced by the source's log below, like every other event a copy step writes.
  const held = new Set((await target.readBank()).map((program) => program.id));
  const programs = (await source.readBank()).filter((program) => !held.has(program.id));
  if (programs.length > 0) {
    await target.admitPrograms(programs, {
      action: "bank.import",
      subject: programs[0]?.id ?? "",
      details: { programs: programs.length },
    });
  }
  counts.programs += programs.length;
  // Put replaces by id: a resumed copy writes the same items again.
  const items = await source.readVideoItems({});
  if (items.length > 0) await target.commitVideo({ put: items, remove: [], audits: [] });
  counts.videoItems += items.length;
  // After the items: a record names rules, which are items. Put replaces per rule, as a resumed copy needs.
  for (const stream of await source.readNotifierStreams()) {
    const rules = await source.readNotifierState(stream);
    await target.commitVideo({ put: [], remove: [], audits: [], notifier: { stream, rules } });
    counts.notifierRules += rules.length;
  }
  const index = await source.readIndex({ activeOnly: false });
  const entries = [...index.entries.values()];
  // Newest first from readAudit; restored oldest first, so the target lists them in the same order.
  const audit = (await source.readAudit()).reverse();
  await target.restoreIndexAndAudit({ entries, spaces: indexSpaces(spaces, entries) }, audit);
  counts.entries += entries.length;
  counts.auditEvents += audit.length;
  if (!secretMatches) counts.foreignKeyedEvents += audit.filter(holdsKeyedHash).length;
}

function holdsKeyedHash(event: AuditEvent): boolean {
  const marker = `${keyedHashScheme}:`;
  return event.subject.startsWith(marker) || JSON.stringify(event.details).includes(marker);
}

/** A stored session as the write that would store it again, with the vectors the source holds. */
async function sessionWriteOf(
  source: ScopedStore,
  session: SessionRecord,
  nodes: readonly RawNode[],
  spaces: readonly VectorSpace[],
  indexTexts: readonly string[] | undefined,
): Promise<SessionWrite> {
  const ids = nodes.map((node) => node.id);
  const textVectors = new Map<string, Map<string, Float32Array>>();
  for (const space of spaces.filter((space) => space.kind === "text")) {
    textVectors.set(space.name, await source.readVectors(space.name, ids));
  }
  const hashes = [
    ...new Set(nodes.flatMap((node) => node.images.flatMap((image) => (image.hash ? [image.hash] : [])))),
  ];
  const imageVectors = new Map<string, Map<string, Float32Array | null>>();
  for (const space of spaces.filter((space) => space.kind === "image")) {
    const known = await source.knownImages(hashes, space.name);
    imageVectors.set(space.name, new Map(hashes.map((hash) => [hash, known.get(hash)?.vector ?? null])));
  }
  const blobs: BlobWrite[] = [];
  for (const hash of hashes) {
    // Every session carries all its blobs: the target stores those it lacks and skips the rest.
    const original = await source.readBlob(hash);
    const thumbnail = await source.readBlob(hash, { thumbnail: true });
    const actual = createHash("sha256").update(original.data).digest("hex");
    if (actual !== hash) throw new Error(`blob ${hash} in the source store holds bytes hashing to ${actual}`);
    blobs.push({ ...original.record, data: original.data, thumbnail: thumbnail.data });
  }
  const rawNodes = nodes.map((node, index): RawNodeWrite => {
    const vectorsOf = (by: ReadonlyMap<string, ReadonlyMap<string, Float32Array | null>>, key: string) =>
      Object.fromEntries(
        [...by].flatMap(([space, vectors]) => {
          const vector = vectors.get(key);
          return vector ? [[space, vector]] : [];
        }),
      );
    return {
      turn: node.turn,
      speaker: node.speaker,
      role: node.role,
      text: node.text,
      ...(indexTexts?.[index] !== undefined ? { indexText: indexTexts[index] } : {}),
      timeMs: Date.parse(node.time),
      source: node.source,
      uri: node.uri,
      metadata: { ...node.metadata },
      images: node.images.map((image) => ({
        hash: image.hash,
        caption: image.caption,
        derivedText: image.derivedText,
        origin: image.origin,
      })),
      textVectors: vectorsOf(textVectors, node.id),
      imageVectors: node.images.map((image) => (image.hash ? vectorsOf(imageVectors, image.hash) : {})),
    };
  });
  const text = spaces.find((space) => space.kind === "text")?.name ?? "";
  return {
    key: session.key,
    timeMs: Date.parse(session.time),
    source: session.source,
    contentHash: session.contentHash,
    blobs,
    rawNodes,
    spaces: [...spaces],
    index: {
      plan: { baseVersion: null, ops: [], audits: [], warnings: [], overflowRepairs: 0 },
      spaces: { text, image: null },
    },
  };
}

/**
 * The spaces an index's vectors live in. The seam does not name them per entry (they only ever
 * follow the models that built the store), so they are told by kind, name and dimensions.
 */
function indexSpaces(
  spaces: readonly VectorSpace[],
  entries: readonly IndexEntry[],
): { text: string; image: string | null } {
  const dimensions = entries[0]?.vector.length;
  const imageDimensions = entries.find((entry) => entry.imageVector)?.imageVector?.length;
  const text =
    spaces.find(
      (space) => space.kind === "text" && space.name.startsWith("text:") && space.dimensions === dimensions,
    ) ??
    spaces.find((space) => space.kind === "text" && space.dimensions === dimensions) ??
    spaces.find((space) => space.kind === "text");
  const image = spaces.find((space) => space.kind === "image" && space.dimensions === imageDimensions);
  return { text: text?.name ?? "", image: image?.name ?? null };
}

function scopeLabel(scope: Scope): string {
  return `${scope.tenant}/${scope.user}${scope.agent ? `/${scope.agent}` : ""}`;
}

/** What differs between two stores, scope by scope: empty when the copy is exact. */
export async function compareStores(from: Store, to: Store): Promise<string[]> {
  const differences: string[] = [];
  const spaces = await from.vectorSpaces();
  const targetScopes = new Set((await to.listScopes()).map((scope) => JSON.stringify(scope)));
  for (const scope of await from.listScopes()) {
    const where = scopeLabel(scope);
    if (!targetScopes.has(JSON.stringify(scope))) {
      differences.push(`${where}: missing from the target`);
      continue;
    }
    const a = from.forScope(scope);
    const b = to.forScope(scope);
    const differ = (what: string, left: unknown, right: unknown) => {
      if (!isDeepStrictEqual(left, right)) differences.push(`${where}: ${what} differ`);
    };
    const sessions = await a.readSessions({});
    differ("sessions", sessions, await b.readSessions({}));
    for (const session of sessions) {
      const nodes = await a.readRawNodes({ sessionId: session.id });
      differ(`raw nodes of session ${session.key}`, nodes, await b.readRawNodes({ sessionId: session.id }));
      const ids = nodes.map((node) => node.id);
      for (const space of spaces.filter((space) => space.kind === "text")) {
        differ(
          `${space.name} vectors of ${session.key}`,
          await a.readVectors(space.name, ids),
          await b.readVectors(space.name, ids),
        );
      }
      const hashes = [
        ...new Set(nodes.flatMap((node) => node.images.flatMap((image) => (image.hash ? [image.hash] : [])))),
      ];
      for (const hash of hashes) {
        // Only a missing blob is a difference; any other failure (I/O, a closed store) is the caller's to see.
        const blob = await b.readBlob(hash).catch((error: unknown) => {
          if (error instanceof NotFoundError) return null;
          throw error;
        });
        const actual = blob && createHash("sha256").update(blob.data).digest("hex");
        if (actual !== hash)
          differences.push(`${where}: blob ${hash} ${blob ? `holds bytes hashing to ${actual}` : "is missing"}`);
      }
      for (const space of spaces.filter((space) => space.kind === "image")) {
        differ(
          `${space.name} vectors of ${session.key}`,
          await a.knownImages(hashes, space.name),
          await b.knownImages(hashes, space.name),
        );
      }
    }
    const ids = sessions.map((session) => session.id);
    differ("session parts", await a.readSessionParts(ids), await b.readSessionParts(ids));
    differ("question bank", await a.readBank(), await b.readBank());
    differ("video items", await a.readVideoItems({}), await b.readVideoItems({}));
    const streams = await a.readNotifierStreams();
    differ("notifier sources", streams, await b.readNotifierStreams());
    for (const stream of streams)
      differ(`notifier record of ${stream}`, await a.readNotifierState(stream), await b.readNotifierState(stream));
    const [left, right] = [await a.readIndex({ activeOnly: false }), await b.readIndex({ activeOnly: false })];
    differ("index entries", [...left.entries.values()], [...right.entries.values()]);
    differ("audit events", await a.readAudit(), await b.readAudit());
    differ("stats", await a.stats(), await b.stats());
  }
  return differences;
}
