import type { KeyStore } from "../../auth/key-store.ts";
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
 * The tenant a tenant-wide request acts for (listing its users): with keys, only a key bound to no
 * user may ask (a user's key sees that user alone); without keys (`--no-auth`), the tenant header.
 */
export async function resolveTenant(headers: Headers, keys: KeyStore | null): Promise<string> {
  if (keys === null) return validateTenant(headers.get(tenantHeader) ?? "default");
  const authorization = headers.get("authorization");
  const token = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!token) throw new HttpError("unauthorized", "missing API key: send Authorization: Bearer <key>");
  const record = await keys.verify(token);
  if (!record) throw new HttpError("unauthorized", "unknown or revoked API key");
  const tenantNamed = headers.get(tenantHeader);
  if (tenantNamed !== null && tenantNamed !== record.tenant) {
    throw new HttpError("forbidden", "this API key is bound to another tenant", { field: "X-Cairn-Tenant" });
  }
  if (record.user !== null) {
    throw new HttpError(
      "forbidden",
      `this API key is bound to user ${record.user}: listing the tenant's users needs a tenant-wide key (cairn keys create --tenant ${record.tenant}, no --user)`,
    );
  }
  return record.tenant;
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
  const authorization = headers.get("authorization");
  const token = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!token) throw new HttpError("unauthorized", "missing API key: send Authorization: Bearer <key>");
  const record = await keys.verify(token);
  if (!record) throw new HttpError("unauthorized", "unknown or revoked API key");
  const tenantNamed = headers.get(tenantHeader);
  if (tenantNamed !== null && tenantNamed !== record.tenant) {
    throw new HttpError("forbidden", "this API key is bound to another tenant", { field: "X-Cairn-Tenant" });
  }
  if (record.user !== null && namedUser !== undefined && namedUser !== record.user) {
    throw new HttpError("forbidden", "this API key is bound to another user", { field: "X-Cairn-User" });
  }
  const user = record.user ?? namedUser;
  if (user === undefined) {
    throw new InputError("X-Cairn-User", "this API key is not bound to a user: name one with the X-Cairn-User header");
  }
  return validateScope({ tenant: record.tenant, user, ...(agent === undefined ? {} : { agent }) });
}
