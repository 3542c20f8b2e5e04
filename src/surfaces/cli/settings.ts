import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { InputError } from "../../core/errors.ts";

/**
 * Settings a person would otherwise repeat on every command: the store, the scope and the model
 * profile. Each comes from the command line first, then the environment (`CAIRN_DB`, `CAIRN_TENANT`,
 * `CAIRN_USER`, `CAIRN_AGENT`, `CAIRN_PROFILE`), then a config file (`./cairn.json`, or the file
 * `CAIRN_CONFIG` names), then a default. The tenant has no default: a command that reads or writes a
 * scope and was told no tenant refuses to run instead of quietly using one nobody chose.
 */
export interface CliSettings {
  readonly db?: string;
  readonly tenant?: string;
  readonly user?: string;
  readonly agent?: string;
  readonly profile?: string;
}

const settingKeys = ["db", "tenant", "user", "agent", "profile"] as const;
type SettingKey = (typeof settingKeys)[number];

const environment: Record<SettingKey, string> = {
  db: "CAIRN_DB",
  tenant: "CAIRN_TENANT",
  user: "CAIRN_USER",
  agent: "CAIRN_AGENT",
  profile: "CAIRN_PROFILE",
};

/** The config file in use: `CAIRN_CONFIG` (which must exist), else `./cairn.json` when there is one. */
export function configPath(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string | undefined {
  if (env.CAIRN_CONFIG) return resolve(cwd, env.CAIRN_CONFIG);
  const local = resolve(cwd, "cairn.json");
  return existsSync(local) ? local : undefined;
}

/** Reads and checks a config file: a JSON object whose keys are settings and whose values are strings. */
export function readConfig(path: string): CliSettings {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError("CAIRN_CONFIG", `cannot read the config file ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InputError("config", `${path} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new InputError("config", `${path} must hold a JSON object such as {"tenant": "acme", "user": "ana"}`);
  }
  const settings: Partial<Record<SettingKey, string>> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!settingKeys.includes(key as SettingKey)) {
      throw new InputError(`config.${key}`, `${path}: unknown setting; known are ${settingKeys.join(", ")}`);
    }
    if (typeof value !== "string" || value.trim() === "") {
      throw new InputError(`config.${key}`, `${path}: must be a non-empty string`);
    }
    settings[key as SettingKey] = value;
  }
  return settings;
}

/** Where one setting came from, so an error can say which source to fix. */
export type SettingSource = "flag" | "environment" | "config" | "default";

export interface ResolvedSetting {
  readonly value: string | undefined;
  readonly source: SettingSource;
}

/** Merges flags, environment and config file for the settings, flags winning. */
export function resolveSettings(
  flags: Partial<Record<SettingKey, unknown>>,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Record<SettingKey, ResolvedSetting> {
  const path = configPath(env, cwd);
  const config = path ? readConfig(path) : {};
  const resolved = {} as Record<SettingKey, ResolvedSetting>;
  for (const key of settingKeys) {
    const flag = flags[key];
    const fromEnv = env[environment[key]];
    resolved[key] =
      typeof flag === "string"
        ? { value: flag, source: "flag" }
        : fromEnv
          ? { value: fromEnv, source: "environment" }
          : config[key] !== undefined
            ? { value: config[key], source: "config" }
            : { value: undefined, source: "default" };
  }
  return resolved;
}

export const missingTenantMessage =
  'name the tenant: --tenant T, CAIRN_TENANT=T, or {"tenant": "T"} in ./cairn.json (the demo memory is tenant demo, user ana)';
