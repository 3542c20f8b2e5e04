/**
 * CPU cost of the query-understanding re-rank (decision 024) on its own, without a store: the session
 * score over a candidate list of the size a default search fuses, re-ranking the first 48.
 *
 *   node --import tsx bench/perf/focus-rerank-cost.ts [candidates] [calls]
 *
 * Compare with a whole search's CPU time (`search-profile.ts`): the A/B of whole searches on a shared
 * machine is noisier than the difference it looks for.
 */
import type { Fused } from "../../src/channels/rrf.ts";
import { focusRerank } from "../../src/route/focus-rerank.ts";
import type { RawNode } from "../../src/store/records.ts";

const candidates = Number(process.argv[2] ?? 300);
const calls = Number(process.argv[3] ?? 20_000);
const nodes = new Map<string, RawNode>();
const fused: Fused[] = [];
for (let index = 0; index < candidates; index++) {
  const id = `n${index}`;
  const session = `s${index % 40}`;
  nodes.set(id, {
    id,
    sessionId: session,
    sessionKey: session,
    turn: index,
    speaker: index % 2 ? "Ana" : "Ben",
    role: null,
    text: "",
    time: "2023-05-08T10:00:00Z",
    source: null,
    uri: null,
    images: [],
    metadata: {},
  });
  fused.push({ id, score: 3 - index / 100, channels: {} });
}
const weights = { session: 0.3, time: 0, speaker: 0, slackMs: 0 };
const question = { windows: [], speakers: new Set<string>() };
for (let call = 0; call < 2_000; call++) focusRerank(fused, nodes, question, weights, 48);
const before = process.cpuUsage();
for (let call = 0; call < calls; call++) focusRerank(fused, nodes, question, weights, 48);
const used = process.cpuUsage(before);
console.log(
  `focusRerank, ${candidates} candidates, depth 48: ${((used.user + used.system) / calls).toFixed(1)} µs CPU per call`,
);
