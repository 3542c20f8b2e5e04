import { blockPostingsSql, blocksOutOfShapeSql, documentPostingsSql } from "../../src/store/postgres/lexical-verify.ts";

/**
 * Checks of the Postgres store's lexical blocks against their documents over every tenant at once,
 * run as a superuser (decision 034): `cairn check`'s own queries (`lexical-verify.ts`), each row's
 * tenant compared with itself instead of one tenant's.
 */

/** Every posting held in a block, as a row. */
export const blockPostings = `(${blockPostingsSql("b.tenant")}) AS p`;

/** Blocks out of shape: none, when every block's count, bounds, order and range are its postings'. */
export const blocksOutOfShape = blocksOutOfShapeSql("b.tenant");

/** Postings that are not their document's terms, and terms of a document without their posting: none, when in step. */
export const postingsOutOfStep = `
  (${documentPostingsSql("d.tenant")} EXCEPT ALL ${blockPostingsSql("b.tenant")})
  UNION ALL
  (${blockPostingsSql("b.tenant")} EXCEPT ALL ${documentPostingsSql("d.tenant")})`;
