/**
 * Conformance cases the SQLite store fails today, each with why: reported by every SQLite run of
 * the suite (plain, and with the ANN index forced on), not hidden.
 */
const scopeBlobCount =
  "blobs are owned per tenant (issue 11, decided for both backends; the SQLite side is changing separately): blobsDeleted still counts blobs no raw node of the whole store references; it must count those no raw node of this scope references";

export const sqliteTodo: Readonly<Record<string, string>> = {
  "forget session cascades to raw nodes, search, vectors, entries and unshared blobs, audited without raw text":
    scopeBlobCount,
  "forget all empties the scope and leaves other scopes and shared blobs alone": scopeBlobCount,
};
