import { resolve } from "node:path";
import type { Scope } from "../../core/scope.ts";
import { Memory, type MemoryOptions } from "../../memory.ts";
import { createModels } from "../../models/profiles.ts";
import { isPostgresUrl, openStore } from "../../store/open-store.ts";

/** Options every command shares. */
export interface CommonOptions {
  readonly db: string;
  /** `db` as messages show it: a Postgres URL's password masked. */
  readonly dbLabel: string;
  readonly json: boolean;
  readonly tenant: string;
  readonly user: string;
  readonly agent?: string;
  readonly profile: string;
  readonly allowRemoteImages: boolean;
}

export const commonOptionSpec = {
  db: { type: "string", default: ".cairn" },
  json: { type: "boolean", default: false },
  tenant: { type: "string", default: "default" },
  user: { type: "string", default: "default" },
  agent: { type: "string" },
  profile: { type: "string", default: process.env.CAIRN_PROFILE ?? "local" },
  "allow-remote-images": { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

export function commonOptions(values: Record<string, unknown>): CommonOptions {
  return {
    // A Postgres URL is passed as it is; a folder is made absolute.
    db: isPostgresUrl(String(values.db)) ? String(values.db) : resolve(String(values.db)),
    dbLabel: maskPassword(String(values.db)),
    json: Boolean(values.json),
    tenant: String(values.tenant),
    user: String(values.user),
    agent: values.agent === undefined ? undefined : String(values.agent),
    profile: String(values.profile),
    allowRemoteImages: Boolean(values["allow-remote-images"]),
  };
}

/** A store location fit to print: `postgres://user:***@host/db` instead of the password. */
export function maskPassword(location: string): string {
  if (!isPostgresUrl(location)) return resolve(location);
  try {
    const url = new URL(location);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return "postgres://…";
  }
}

export function scopeOf(options: CommonOptions, user = options.user): Scope {
  return options.agent ? { tenant: options.tenant, user, agent: options.agent } : { tenant: options.tenant, user };
}

/**
 * The memory behind `--db`. `mustExist` (commands that read or forget) refuses a store that is not
 * there with a NotFoundError (exit 3) instead of creating an empty one: a mistyped `--db` would
 * otherwise answer "nothing found" from a fresh store and leave it behind.
 */
export async function openMemory(
  options: CommonOptions,
  { mustExist = false, video }: { mustExist?: boolean; video?: MemoryOptions["video"] } = {},
): Promise<Memory> {
  const store = await openStore(options.db, { mustExist });
  let models: Awaited<ReturnType<typeof createModels>>;
  try {
    models = await createModels(options.profile);
  } catch (error) {
    await store.close();
    throw error;
  }
  try {
    return await Memory.open({
      store,
      models,
      ownsModels: true,
      allowRemoteImages: options.allowRemoteImages,
      ...(video ? { video } : {}),
    });
  } catch (error) {
    await models.close();
    await store.close();
    throw error;
  }
}

/** Writes a result: JSON for `--json`, otherwise the human rendering. */
export function output(options: CommonOptions, value: unknown, human: () => string): void {
  process.stdout.write(options.json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}
