import assert from "node:assert/strict";
import { cairnProcess } from "./cairn-process.ts";
import { spawnServe } from "./serve-process.ts";

/**
 * Several stateless `cairn serve` instances on one store: the deployment a shared database is for.
 * Writers to the same scope go through both instances at once, so their maintenance plans race
 * (an index-version conflict must re-plan, never fail the write); every acknowledged session must
 * then be readable and searchable through either instance, and `cairn check` must find nothing.
 * The store is a SQLite folder here (two processes share it through WAL); the Postgres suite runs
 * the same function against a database URL (`test/http/shared-store-postgres.test.ts`).
 */
export async function twoInstancesOnOneStore(
  t: { after: (fn: () => void) => void },
  db: string,
  options: { readonly writers?: number; readonly sessionsPerWriter?: number } = {},
): Promise<void> {
  const writers = options.writers ?? 4;
  const perWriter = options.sessionsPerWriter ?? 6;
  const instances = [await spawnServe(t, ["--db", db, "--no-auth"]), await spawnServe(t, ["--db", db, "--no-auth"])];
  const headers = { "content-type": "application/json", "x-cairn-tenant": "acme", "x-cairn-user": "ana" };
  const statuses: number[] = [];
  const acknowledged: string[] = [];
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      for (let n = 0; n < perWriter; n++) {
        const key = `w${writer}-s${n}`;
        const instance = instances[(writer + n) % instances.length];
        assert.ok(instance);
        const response = await fetch(`${instance.url}/v1/sessions`, {
          method: "POST",
          headers,
          body: JSON.stringify({
            session: key,
            time: `2024-06-${String(1 + n).padStart(2, "0")}T${String(8 + writer).padStart(2, "0")}:00:00Z`,
            turns: [
              { speaker: "Ana", text: `writer ${writer} note ${n}: the lighthouse keeper logged marker${key}` },
              { speaker: "Bo", text: `and the ferry to the island ran late on day ${n}` },
            ],
          }),
        });
        statuses.push(response.status);
        await response.arrayBuffer();
        if (response.status === 201 || response.status === 200) acknowledged.push(key);
      }
    }),
  );
  assert.deepEqual(
    statuses.filter((status) => status !== 201),
    [],
    "every write through either instance is acknowledged (no 409 from a raced plan, no 500)",
  );
  assert.equal(acknowledged.length, writers * perWriter);

  for (const instance of instances) {
    const listed = await fetch(`${instance.url}/v1/sessions?limit=1000`, { headers });
    assert.equal(listed.status, 200);
    const body = (await listed.json()) as { sessions: { key: string }[] };
    assert.deepEqual(
      body.sessions.map((session) => session.key).sort(),
      [...acknowledged].sort(),
      `${instance.url} reads every acknowledged session`,
    );
    for (const key of [acknowledged[0], acknowledged.at(-1)]) {
      const searched = await fetch(`${instance.url}/v1/search`, {
        method: "POST",
        headers,
        body: JSON.stringify({ text: `marker${key}` }),
      });
      assert.equal(searched.status, 200);
      const pack = (await searched.json()) as { items: { text: string }[] };
      assert.ok(
        pack.items.some((item) => item.text.includes(`marker${key}`)),
        `${instance.url} finds ${key} written through either instance`,
      );
    }
  }
  for (const instance of instances) instance.child.kill("SIGTERM");
  await Promise.all(instances.map((instance) => instance.exited));
  const checked = await cairnProcess(["check", "--db", db, "--profile", "hash", "--json"]);
  assert.equal(checked.code, 0, `cairn check after the race: ${checked.stdout}${checked.stderr}`);
}
