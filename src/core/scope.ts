import { InputError } from "./errors.ts";
import { isRecord } from "./narrow.ts";

/** Every record belongs to exactly one scope; the store enforces it on every call. */
export interface Scope {
  readonly tenant: string;
  readonly user: string;
  readonly agent?: string;
}

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

export function validateScope(scope: unknown): Scope {
  if (!isRecord(scope)) throw new InputError("scope", "must be an object { tenant, user, agent? }");
  const { tenant, user, agent } = scope;
  checkId("scope.tenant", tenant);
  checkId("scope.user", user);
  if (agent !== undefined) checkId("scope.agent", agent);
  return Object.freeze({
    tenant,
    user,
    ...(agent === undefined ? {} : { agent }),
  });
}

/** A tenant id on its own (listing a tenant's users): the same rules as in a scope. */
export function validateTenant(tenant: unknown): string {
  checkId("tenant", tenant);
  return tenant;
}

/** A single string the storage layer partitions by. `/` cannot occur in ids, so keys never collide. */
export function scopeKey(scope: Scope): string {
  return `${scope.tenant}/${scope.user}/${scope.agent ?? ""}`;
}

function checkId(field: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || !idPattern.test(value)) {
    throw new InputError(
      field,
      "must be 1-128 characters of letters, digits, '.', '_', '@' or '-', starting with a letter or digit",
    );
  }
}
