/**
 * The local text model's rate by thread count (`createLocalModels({ textWorkers })`): 640 sentences
 * in calls of 64 after one warm-up call, for 1 and 2 workers alternated twice; prints texts/s and the
 * process RSS after each run. Needs cairn-memory-models-local (a clone has it).
 *
 *   npx tsx bench/perf/text-workers.ts
 */
import { createLocalModels } from "../../src/models/local-provider.ts";

const texts = Array.from(
  { length: 640 },
  (_, index) => `Sentence number ${index} about the red bike and the library on a sunny day`,
);
const call = 64;

for (const workers of [1, 2, 1, 2]) {
  const models = await createLocalModels({ ocr: false, imageFeatures: false, textWorkers: workers });
  try {
    await models.text.embed(texts.slice(0, call));
    const started = performance.now();
    for (let start = 0; start < texts.length; start += call) await models.text.embed(texts.slice(start, start + call));
    const seconds = (performance.now() - started) / 1000;
    const rssMb = Math.round(process.memoryUsage().rss / 1e6);
    console.log(JSON.stringify({ workers, textsPerSecond: Math.round(texts.length / seconds), rssMb }));
  } finally {
    await models.close();
  }
}
