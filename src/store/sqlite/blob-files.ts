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
import { join } from "node:path";

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

  /** Starts a write: returns a journal id to pass to `settle` once the transaction is over. */
  begin(hashes: readonly string[]): string {
    const id = randomUUID();
    const path = join(this.#root, "pending", id);
    writeFileSync(path, hashes.join("\n"));
    return id;
  }

  put(hash: string, data: Uint8Array, thumbnail: Uint8Array): void {
    writeAtomically(this.blobPath(hash), data);
    writeAtomically(this.thumbnailPath(hash), thumbnail);
  }

  /** Ends a write. Hashes the database does not know (the transaction failed) lose their files. */
  settle(journalId: string, isKnown: (hash: string) => boolean): void {
    const path = join(this.#root, "pending", journalId);
    if (!existsSync(path)) return;
    for (const hash of readFileSync(path, "utf8").split("\n").filter(Boolean)) {
      if (!isKnown(hash)) this.remove(hash);
    }
    rmSync(path, { force: true });
  }

  /** Settles journals left by writers that died mid-write. */
  recover(isKnown: (hash: string) => boolean): number {
    const journals = readdirSync(join(this.#root, "pending"));
    for (const journal of journals) this.settle(journal, isKnown);
    return journals.length;
  }

  read(hash: string): Uint8Array {
    return readFileSync(this.blobPath(hash));
  }

  readThumbnail(hash: string): Uint8Array {
    return readFileSync(this.thumbnailPath(hash));
  }

  remove(hash: string): void {
    rmSync(this.blobPath(hash), { force: true });
    rmSync(this.thumbnailPath(hash), { force: true });
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
