import { randomBytes, randomUUID } from "node:crypto";
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Bytes of the per-store secret under which forgotten keys and ids are kept as keyed hashes. */
const secretBytes = 32;

/**
 * The store's audit secret (`<store>/audit.key`), created on first open. Written to a temporary
 * file and hard-linked into place, so two processes opening a new store at once agree on one secret.
 */
export function loadAuditSecret(folder: string): Buffer {
  const path = join(folder, "audit.key");
  try {
    return readSecret(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const temporary = `${path}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, "wx", 0o600);
  try {
    writeFileSync(fd, randomBytes(secretBytes));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
  return readSecret(path);
}

/**
 * Replaces the store's audit secret (`cairn migrate --carry-audit-secret`): written beside it and
 * renamed over it, so a crash leaves the old secret or the new one, never a torn file.
 */
export function replaceAuditSecret(folder: string, secret: Uint8Array): void {
  if (secret.length !== secretBytes) throw new Error(`an audit secret is ${secretBytes} bytes, got ${secret.length}`);
  const path = join(folder, "audit.key");
  const temporary = `${path}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, "wx", 0o600);
  try {
    writeFileSync(fd, secret);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

function readSecret(path: string): Buffer {
  const secret = readFileSync(path);
  if (secret.length !== secretBytes) throw new Error(`${path} holds ${secret.length} bytes, expected ${secretBytes}`);
  return secret;
}
