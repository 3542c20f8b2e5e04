import { NotFoundError } from "../../src/core/errors.ts";
import { defaultMaintenanceConfig } from "../../src/maintain/config.ts";
import { forgetWithRepair } from "../../src/maintain/forget.ts";
import { listPublicEntries } from "../../src/maintain/scope-index.ts";
import type { VectorSpaces } from "../../src/models/vector-spaces.ts";
import type { Entry, ForgetResult, ForgetTarget, RawNode, SessionRecord } from "../../src/store/records.ts";
import type { ScopedStore } from "../../src/store/store.ts";

/**
 * The reads tests make most often, in terms of the narrow store seam, and forget as the SDK runs
 * it: planned by the maintenance layer, applied by the store.
 */
export async function getRawNode(scoped: ScopedStore, id: string): Promise<RawNode> {
  const [node] = await scoped.readRawNodes({ ids: [id] });
  if (!node) throw new NotFoundError("raw node", id);
  return node;
}

export async function getSession(scoped: ScopedStore, id: string): Promise<SessionRecord> {
  const [session] = await scoped.readSessions({ ids: [id] });
  if (!session) throw new NotFoundError("session", id);
  return session;
}

export async function findSessionByKey(scoped: ScopedStore, key: string): Promise<SessionRecord | null> {
  const [session] = await scoped.readSessions({ keys: [key] });
  return session ?? null;
}

export async function getThumbnail(scoped: ScopedStore, hash: string): Promise<Uint8Array> {
  return (await scoped.readBlob(hash, { thumbnail: true })).data;
}

export async function listEntries(
  scoped: ScopedStore,
  options: { limit?: number; offset?: number; status?: Entry["status"] } = {},
): Promise<Entry[]> {
  return listPublicEntries(scoped, options);
}

export async function forget(scoped: ScopedStore, target: ForgetTarget, spaces: VectorSpaces): Promise<ForgetResult> {
  return forgetWithRepair(scoped, target, spaces, defaultMaintenanceConfig.bounds);
}
