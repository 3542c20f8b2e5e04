import { createHmac } from "node:crypto";

/**
 * How a forget keeps forgotten keys and ids in the audit log (decision 007), the same on every
 * backend: as `hmac-sha256:<hex>` under a secret the store keeps, so a later request can be matched
 * by hashing it, and the log keeps its shape without the identifiers.
 */
export const keyedHashScheme = "hmac-sha256";

export function keyedHash(secret: Uint8Array, value: string): string {
  return `${keyedHashScheme}:${createHmac("sha256", secret).update(value).digest("hex")}`;
}

/**
 * One stored audit event with every forgotten value (its subject, or any string in its details)
 * replaced by `hash(value)` and marked `redacted`; null when it names none exactly (a substring
 * match of the backend's pre-filter is left as it was).
 */
export function redactEvent(
  event: { readonly subject: string; readonly details: string },
  forgotten: ReadonlySet<string>,
  hash: (value: string) => string,
): { subject: string; details: string } | null {
  let changed = false;
  const replace = (value: unknown): unknown => {
    if (typeof value === "string" && forgotten.has(value)) {
      changed = true;
      return hash(value);
    }
    if (Array.isArray(value)) return value.map(replace);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, replace(inner)]));
    }
    return value;
  };
  const subject = replace(event.subject) as string;
  const details = replace(JSON.parse(event.details)) as Record<string, unknown>;
  return changed ? { subject, details: JSON.stringify({ ...details, redacted: keyedHashScheme }) } : null;
}
