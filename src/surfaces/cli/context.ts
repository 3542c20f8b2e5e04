import { resolve } from "node:path";
import { InputError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import type { Memory, MemoryOptions } from "../../memory.ts";
import type { Models } from "../../models/provider.ts";
import { isPostgresUrl, openStore } from "../../store/open-store.ts";
import { missingTenantMessage, resolveSettings } from "./settings.ts";

/** Options every command shares. */
export interface CommonOptions {
  readonly db: string;
  /** `db` as messages show it: a Postgres URL's password masked. */
  readonly dbLabel: string;
  readonly json: boolean;
  /** Unset when no flag, environment variable or config file named one: `scopeOf` then refuses. */
  readonly tenant?: string;
  readonly user: string;
  readonly agent?: string;
  readonly profile: string;
  readonly allowRemoteImages: boolean;
}

/** Flags every command takes. */
export const commonOptionSpec = {
  db: { type: "string" },
  json: { type: "boolean", default: false },
  profile: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
} as const;

/** Flags of the commands that read or write one scope. */
export const scopeOptionSpec = {
  tenant: { type: "string" },
  user: { type: "string" },
  agent: { type: "string" },
} as const;

export function commonOptions(values: Record<string, unknown>, settings = resolveSettings(values)): CommonOptions {
  const db = settings.db.value ?? ".cairn";
  return {
    // A Postgres URL is passed as it is; a folder is made absolute.
    db: isPostgresUrl(db) ? db : resolve(db),
    dbLabel: maskPassword(db),
    json: Boolean(values.json),
    tenant: settings.tenant.value,
    user: settings.user.value ?? "default",
    agent: settings.agent.value,
    profile: settings.profile.value ?? "local",
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

/** The scope a command works in; no tenant named anywhere is a usage error (exit 2), never a default. */
export function scopeOf(options: CommonOptions, user = options.user): Scope {
  const tenant = requireTenant(options);
  return options.agent ? { tenant, user, agent: options.agent } : { tenant, user };
}

export function requireTenant(options: CommonOptions): string {
  if (options.tenant === undefined) throw new InputError("--tenant", missingTenantMessage);
  return options.tenant;
}

/**
 * The memory behind `--db`. `mustExist` (commands that read or forget) refuses a store that is not
 * there with a NotFoundError (exit 3) instead of creating an empty one: a mistyped `--db` would
 * otherwise answer "nothing found" from a fresh store and leave it behind.
 */
export async function openMemory(
  options: CommonOptions,
  {
    mustExist = false,
    video,
    readWorkers,
  }: {
    mustExist?: boolean;
    video?: MemoryOptions["video"];
    /** The SQLite store's read workers (`cairn serve`); none by default, so one-shot commands start no thread. */
    readWorkers?: number;
  } = {},
): Promise<Memory> {
  // Imported here, not at the top: a command's --help, and `cairn --help`, load none of the engine.
  const [{ Memory }, { createModels }] = await Promise.all([
    import("../../memory.ts"),
    import("../../models/profiles.ts"),
  ]);
  const store = await openStore(options.db, { mustExist, ...(readWorkers === undefined ? {} : { readWorkers }) });
  let models: Models;
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
