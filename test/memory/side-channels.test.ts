import { join } from "node:path";
import { it } from "node:test";
import { tempDir } from "../support/fixtures.ts";
import { checkNoSideChannels } from "../support/side-channels.ts";

/**
 * No cross-tenant side channel on the SQLite store: the check is shared with the Postgres store's
 * run (`side-channels-postgres.test.ts`), see `test/support/side-channels.ts`.
 */
it("nothing tenant A stores or asks changes tenant B's results, scores, counts or model calls", async (t) => {
  const dir = tempDir(t);
  await checkNoSideChannels({ dir, location: async (name) => join(dir, name) });
});
