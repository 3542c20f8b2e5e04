/**
 * What preparing a question bank saves per compiled search: the LCMP bank (first N concepts, hash
 * profile, compiled query-blind through Memory.compile), its questions matched against the bank as
 * stored and as prepared (`prepareBank`), alternating, three rounds; checks the matches are identical.
 *
 *   CAIRN_DATA=../shared/data npx tsx bench/pmmc-match-cost.ts [concepts=30]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { replayHistory } from "../src/bench/replay.ts";
import { matchBank, prepareBank, programTerms } from "../src/compile/bank-match.ts";
import { createModels } from "../src/models/profiles.ts";

const concepts = Number(process.argv[2] ?? 30);
const dataset = await loadDataset("lcmp", resolveDataDir(undefined), { limit: concepts });
const history = dataset.histories[0];
if (!history) throw new Error("no LCMP history under the data folder");
const models = await createModels("hash");
const dir = mkdtempSync(join(tmpdir(), "cairn-pmmc-match-"));
const replayed = await replayHistory(history, { models, dir });
await replayed.memory.compile(replayed.scope);
const bank = await replayed.memory.listPrograms(replayed.scope, { limit: 100_000 });
const candidates = () =>
  bank.map((entry) => ({
    id: entry.id,
    question: entry.question,
    terms: programTerms(entry.program),
    vector: entry.vector,
    imageVector: null,
  }));
const questions = history.questions.slice(0, 100);
const vectors = await models.text.embed(questions.map((question) => question.text));
const prepared = prepareBank(candidates());
let identical = 0;
for (let round = 1; round <= 3; round++) {
  let stored = 0;
  let ready = 0;
  for (const [index, question] of questions.entries()) {
    const query = { text: question.text, vector: vectors[index], imageVector: undefined };
    let started = performance.now();
    const plain = matchBank(query, candidates(), 60);
    stored += performance.now() - started;
    started = performance.now();
    const fast = matchBank(query, prepared, 60);
    ready += performance.now() - started;
    if (JSON.stringify(plain) === JSON.stringify(fast)) identical++;
  }
  const per = (ms: number) => (ms / questions.length).toFixed(2);
  console.log(`round ${round}, bank ${bank.length}: ${per(stored)} ms a query as stored, ${per(ready)} ms prepared`);
}
console.log(`identical matches: ${identical} of ${questions.length * 3}`);
await replayed.memory.close();
rmSync(dir, { recursive: true, force: true });
