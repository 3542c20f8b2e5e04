import { randomUUID } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * Content-addressed files for original images and their thumbnails. A file is written to a
 * temporary name, fsynced and renamed, so a reader never sees a partial file. Files land
 * before the database transaction that references them; a journal records which hashes a
 * write is about to add, so files orphaned by a crash are removed on the next open.
 */
export class BlobFiles {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  init(): void {
    for (const folder of ["blobs", "thumbs", "pending"]) mkdirSync(join(this.#root, folder), { recursive: true });
  }

  blobPath(hash: string): string {
    return join(this.#root, "blobs", hash.slice(0, 2), hash);
  }

  thumbnailPath(hash: string): string {
    return join(this.#root, "thumbs", hash.slice(0, 2), `${hash}.webp`);
  }

  /**
   * Starts a write (or a forget): journals the hashes whose files may change, and returns the
   * journal id to pass to `settle` once the transaction is over. The id names the writing process
   * so recovery can tell a live writer's journal from a dead one's.
   */
  begin(hashes: readonly string[]): string {
    const id = `${process.pid}-${randomUUID()}`;
    writeFileSync(join(this.#root, "pending", id), hashes.join("\n"));
    return id;
  }

  put(hash: string, data: Uint8Array, thumbnail: Uint8Array): void {
    writeAtomically(this.blobPath(hash), data);
    writeAtomically(this.thumbnailPath(hash), thumbnail);
  }

  /**
   * Ends a journalled step: files of hashes the database does not know (a failed write, or a
   * forget that removed the last reference) are deleted, unless another open journal still
   * lists them (a concurrent writer may be about to commit the same image).
   */
  settle(journalId: string, isKnown: (hash: string) => boolean): void {
    const path = join(this.#root, "pending", journalId);
    if (!existsSync(path)) return;
    const others = this.#journalledHashes(journalId);
    for (const hash of readJournal(path)) {
      if (!isKnown(hash) && !others.has(hash)) this.remove(hash);
    }
    rmSync(path, { force: true });
  }

  /** Settles journals whose writer process is gone (killed mid-write); live writers are left alone. */
  recover(isKnown: (hash: string) => boolean): number {
    const dead = readdirSync(join(this.#root, "pending")).filter((journal) => !isAlive(Number(journal.split("-")[0])));
    for (const journal of dead) this.settle(journal, isKnown);
    return dead.length;
  }

  #journalledHashes(except: string): Set<string> {
    const hashes = new Set<string>();
    for (const journal of readdirSync(join(this.#root, "pending"))) {
      if (journal === except) continue;
      for (const hash of readJournal(join(this.#root, "pending", journal))) hashes.add(hash);
    }
    return hashes;
  }

  read(hash: string): Uint8Array {
    return readFileSync(this.blobPath(hash));
  }

  readThumbnail(hash: string): Uint8Array {
    return readFileSync(this.thumbnailPath(hash));
  }

  /** Deletes a blob's file, its thumbnail, and temporary files a killed writer left for it. */
  remove(hash: string): void {
    for (const path of [this.blobPath(hash), this.thumbnailPath(hash)]) {
      rmSync(path, { force: true });
      const folder = dirname(path);
      const prefix = `${basename(path)}.`;
      if (!existsSync(folder)) continue;
      for (const name of readdirSync(folder)) {
        if (name.startsWith(prefix) && name.endsWith(".tmp")) rmSync(join(folder, name), { force: true });
      }
    }
  }
}

function readJournal(path: string): string[] {
  try {
    return readFileSync(path, "utf8").split("\n").filter(Boolean);
  } catch {
    return []; // settled by its owner between listing and reading: nothing left to protect
  }
}

/** A journal without a parsable pid (older format) counts as dead. */
function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function writeAtomically(path: string, data: Uint8Array): void {
  if (existsSync(path)) return; // content-addressed: the same name always holds the same bytes
  mkdirSync(join(path, ".."), { recursive: true });
  const temporary = `${path}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, "w");
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}
