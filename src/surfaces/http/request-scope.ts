import type { ApiKeyRecord, KeyStore } from "../../auth/key-store.ts";
import { InputError } from "../../core/errors.ts";
import { type Scope, validateScope, validateTenant } from "../../core/scope.ts";
import { HttpError } from "./errors.ts";

export const userHeader = "x-cairn-user";
export const agentHeader = "x-cairn-agent";
export const tenantHeader = "x-cairn-tenant";

/**
 * The scope a request acts in. With keys: the tenant (and user, if bound) come from the key, a
 * different user named by the request is refused. Without keys (`--no-auth`): from headers, with
 * `default` for both. REST and MCP resolve it here, so both see the same rules.
 */
/**
 * What a tenant-level request may see (listing users): the tenant, and the one user a key is bound
 * to (null for a tenant-wide key, made without `--user`). Without keys (`--no-auth`): the tenant
 * header, tenant-wide.
 */
export async function resolveTenant(
  headers: Headers,
  keys: KeyStore | null,
): Promise<{ tenant: string; user: string | null }> {
  if (keys === null) return { tenant: validateTenant(headers.get(tenantHeader) ?? "default"), user: null };
  const record = await verifiedKey(headers, keys);
  return { tenant: record.tenant, user: record.user };
}

/** The request's API key, verified, and held to the tenant it names (if it names one). */
async function verifiedKey(headers: Headers, keys: KeyStore): Promise<ApiKeyRecord> {
  const authorization = headers.get("authorization");
  const token = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!token) throw new HttpError("unauthorized", "missing API key: send Authorization: Bearer <key>");
  const record = await keys.verify(token);
  if (!record) throw new HttpError("unauthorized", "unknown or revoked API key");
  const tenantNamed = headers.get(tenantHeader);
  if (tenantNamed !== null && tenantNamed !== record.tenant) {
    throw new HttpError("forbidden", "this API key is bound to another tenant", { field: "X-Cairn-Tenant" });
  }
  return record;
}

export async function resolveScope(headers: Headers, keys: KeyStore | null): Promise<Scope> {
  const namedUser = headers.get(userHeader) ?? undefined;
  const agent = headers.get(agentHeader) ?? undefined;
  if (keys === null) {
    return validateScope({
      tenant: headers.get(tenantHeader) ?? "default",
      user: namedUser ?? "default",
      ...(agent === undefined ? {} : { agent }),
    });
  }
  const record = await verifiedKey(headers, keys);
  if (record.user !== null && namedUser !== undefined && namedUser !== record.user) {
    throw new HttpError("forbidden", "this API key is bound to another user", { field: "X-Cairn-User" });
  }
  const user = record.user ?? namedUser;
  if (user === undefined) {
    throw new InputError("X-Cairn-User", "this API key is not bound to a user: name one with the X-Cairn-User header");
  }
  return validateScope({ tenant: record.tenant, user, ...(agent === undefined ? {} : { agent }) });
}
