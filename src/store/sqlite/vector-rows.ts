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

export function vectorTableOf(space: SpaceRow): VectorTable {
  return { table: space.table_name, kind: space.kind, dimensions: space.dimensions };
}

/** The raw node a vector row belongs to: image rows are packed `imageSlots` to a raw node. */
export function rawNodeRowidOf(kind: "text" | "image", vectorRowid: number): number {
  return kind === "image" ? Math.floor(vectorRowid / imageSlots) : vectorRowid;
}
