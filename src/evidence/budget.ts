/** The joint reader budget (C3M): every evidence pack stays within each dimension. Defaults from DESIGN §4. */
export interface Budget {
  /** Index pages routing may read (C3M page beam). */
  readonly pages: number;
  /** Raw nodes in the pack. */
  readonly rawNodes: number;
  /** Original images in the pack. */
  readonly images: number;
  /** Text tokens of the pack's raw-node text (o200k tokenizer). */
  readonly textTokens: number;
}

/** C3M's reader limits (page beam 3, 12 raw nodes, 8 images, 12K text tokens; DESIGN §4), so results compare with the paper's. */
export const defaultBudget: Budget = Object.freeze({ pages: 3, rawNodes: 12, images: 8, textTokens: 12_000 });
