/**
 * Vector rows as the commit path, the forget path and the ANN indexes all see them. A leaf: it
 * imports nothing, so the scoped store and the index registry can share it without a cycle.
 */

/**
 * Image vector rows use rowid = raw-node rowid × this + ordinal: at most 63 images per turn, and a
 * rowid that still names its raw node after integer division.
 */
export const imageSlots = 64;

/** A row of `vector_spaces`: one vector space and the vec0 table holding its vectors. */
export interface SpaceRow {
  readonly name: string;
  readonly kind: "text" | "image";
  readonly dimensions: number;
  readonly table_name: string;
}

/** What the ANN registry needs to know about a vector space's vec0 table. */
export interface VectorTable {
  readonly table: string;
  readonly kind: "text" | "image";
  readonly dimensions: number;
}

/** One vector written to (or read from) a vec0 table. */
export interface VectorRow {
  readonly table: string;
  readonly rowid: number;
  readonly vector: Float32Array;
}

/**
 * The plain copy of a vec0 table's vectors: rowid → f32 bytes in an ordinary B-tree. vec0 keeps
 * vectors in chunks of ~1,000 inside one large BLOB, so reading one vector walks that BLOB's
 * overflow pages (~0.3–0.8 ms here); this table reads one in a few microseconds, which is what
 * scoring a search's candidates exactly needs (decision 015). vec0 stays what KNN scans use.
 */
export function plainTableOf(vec0Table: string): string {
  return `plain_${vec0Table}`;
}

export function plainTableSql(vec0Table: string): string {
  return `CREATE TABLE ${plainTableOf(vec0Table)} (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)`;
}

export function vectorTableOf(space: SpaceRow): VectorTable {
  return { table: space.table_name, kind: space.kind, dimensions: space.dimensions };
}

/** The raw node a vector row belongs to: image rows are packed `imageSlots` to a raw node. */
export function rawNodeRowidOf(kind: "text" | "image", vectorRowid: number): number {
  return kind === "image" ? Math.floor(vectorRowid / imageSlots) : vectorRowid;
}
