import { randomUUID } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
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
 * Content-addressed files for original images and their thumbnails, in one folder per owner (a
 * tenant: its token, see tenants.ts), so no tenant's write or forget depends on what another stores. A file is
 * named by a blob key, `<owner>/<sha256>`. It is written to a temporary name, fsynced and renamed,
 * so a reader never sees a partial file. Files land before the database transaction that references
 * them; a journal records which keys a write is about to add, so files orphaned by a crash are
 * removed on the next open.
 *
 * Files are deleted only under the database's write lock (`underWriteLock`), after checking there
 * that no row holds the blob, and a commit makes sure, under the same lock, that every file it
 * references exists (writing it again if a deletion got there first). So a file goes only when no
 * committed row needs it, whatever the timing of writers and forgets in other processes: without
 * the lock a forget's check-then-delete could remove the file of an image that another process's
 * session committed in between (seen in the crash loop as a stored image with no file).
 */
export class BlobFiles {
  readonly #root: string;
  readonly #underWriteLock: (work: () => void) => void;

  constructor(root: string, underWriteLock: (work: () => void) => void) {
    this.#root = root;
    this.#underWriteLock = underWriteLock;
  }

  init(): void {
    for (const folder of ["blobs", "thumbs", "pending"]) mkdirSync(join(this.#root, folder), { recursive: true });
  }

  blobPath(key: string): string {
    const { owner, hash } = splitBlobKey(key);
    return join(this.#root, "blobs", owner, hash.slice(0, 2), hash);
  }

  thumbnailPath(key: string): string {
    const { owner, hash } = splitBlobKey(key);
    return join(this.#root, "thumbs", owner, hash.slice(0, 2), `${hash}.webp`);
  }

  /**
   * Moves files of the shared layout that stores before schema 4 wrote (`blobs/<ab>/<hash>`, one
   * file for every tenant) to each owner's folder, and deletes files no owner holds. Hard links
   * when the file system allows, so the move costs no copy; safe to repeat after a crash.
   */
  adoptSharedLayout(ownersOf: (hash: string) => readonly string[]): number {
    let moved = 0;
    for (const [folder, suffix, pathOf] of [
      ["blobs", "", (key: string) => this.blobPath(key)],
      ["thumbs", ".webp", (key: string) => this.thumbnailPath(key)],
    ] as const) {
      const top = join(this.#root, folder);
      for (const prefix of readdirSync(top).filter((name) => /^[0-9a-f]{2}$/.test(name))) {
        for (const name of readdirSync(join(top, prefix))) {
          const shared = join(top, prefix, name);
          const hash = suffix && name.endsWith(suffix) ? name.slice(0, -suffix.length) : name;
          if (/^[0-9a-f]{64}$/.test(hash)) {
            for (const owner of ownersOf(hash)) linkOrCopy(shared, pathOf(blobKey(owner, hash)));
            moved += 1;
          }
          rmSync(shared, { force: true });
        }
        rmSync(join(top, prefix), { recursive: true, force: true });
      }
    }
    return moved;
  }

  /**
   * Starts a write (or a forget): journals the blob keys whose files may change, and returns the
   * journal id to pass to `settle` once the transaction is over. The id names the writing process
   * so recovery can tell a live writer's journal from a dead one's.
   */
  begin(keys: readonly string[]): string {
    const id = `${process.pid}-${randomUUID()}`;
    // A step that names no blob has no file to protect or clean up: no journal (settle finds none).
    if (keys.length > 0) writeFileSync(join(this.#root, "pending", id), keys.join("\n"));
    return id;
  }

  /** Writes the blob's file and thumbnail, each unless it is already there (the same name holds the same bytes). */
  put(key: string, data: Uint8Array, thumbnail: Uint8Array): void {
    writeAtomically(this.blobPath(key), data);
    writeAtomically(this.thumbnailPath(key), thumbnail);
  }

  /**
   * Ends a journalled step: files of keys the database does not know (a failed write, or a
   * forget that removed the owner's last reference) are deleted, unless another open journal still
   * lists them (a concurrent writer may be about to commit the same image). Journals of stores
   * before schema 4 list bare hashes: `adoptSharedLayout` already dealt with their files.
   */
  settle(journalId: string, isKnown: (key: string) => boolean): void {
    const path = join(this.#root, "pending", journalId);
    if (!existsSync(path)) return;
    const keys = readJournal(path).filter(isBlobKey);
    if (keys.length > 0) {
      try {
        this.#underWriteLock(() => {
          const others = this.#journalledKeys(journalId);
          for (const key of keys) if (!isKnown(key) && !others.has(key)) this.remove(key);
        });
      } catch (error) {
        // The lock was not to be had (another writer held it past the busy timeout): the journal
        // stays, and the next open settles it. The write or forget it belongs to is already over.
        // Anything else (a file that cannot be deleted) is a real failure and is reported.
        if ((error as { code?: unknown }).code === "SQLITE_BUSY") return;
        throw error;
      }
    }
    rmSync(path, { force: true });
  }

  /** Settles journals whose writer process is gone (killed mid-write); live writers are left alone. */
  recover(isKnown: (key: string) => boolean): number {
    const dead = readdirSync(join(this.#root, "pending")).filter((journal) => !isAlive(Number(journal.split("-")[0])));
    for (const journal of dead) this.settle(journal, isKnown);
    return dead.length;
  }

  #journalledKeys(except: string): Set<string> {
    const keys = new Set<string>();
    for (const journal of readdirSync(join(this.#root, "pending"))) {
      if (journal === except) continue;
      for (const key of readJournal(join(this.#root, "pending", journal))) keys.add(key);
    }
    return keys;
  }

  read(key: string): Uint8Array {
    return readFileSync(this.blobPath(key));
  }

  readThumbnail(key: string): Uint8Array {
    return readFileSync(this.thumbnailPath(key));
  }

  /** Deletes a blob's file, its thumbnail, and temporary files a killed writer left for it. */
  remove(key: string): void {
    for (const path of [this.blobPath(key), this.thumbnailPath(key)]) {
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

/** The name of one owner's copy of a blob: `<owner>/<sha256>`. */
export function blobKey(owner: string, hash: string): string {
  return `${owner}/${hash}`;
}

export function splitBlobKey(key: string): { owner: string; hash: string } {
  if (!isBlobKey(key)) throw new Error(`not a blob key: ${key}`);
  const slash = key.indexOf("/");
  return { owner: key.slice(0, slash), hash: key.slice(slash + 1) };
}

function isBlobKey(key: string): boolean {
  return /^t[0-9a-f]{24}\/[0-9a-f]{64}$/.test(key);
}

function linkOrCopy(from: string, to: string): void {
  if (existsSync(to)) return;
  mkdirSync(dirname(to), { recursive: true });
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
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
