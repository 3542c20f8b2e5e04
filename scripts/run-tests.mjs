#!/usr/bin/env node
// `npm test`'s runner: the test files as node --test runs them (each in its own process, two at a time), in the
// order given. `node --test` on Node 20 sorts its files by path, which put the packaging test (the longest file,
// minutes of compiling) among the last to start, where the whole run waited on it alone; given first, it runs
// beside the others from the start. Arguments: --concurrency=N, then the files. Run with `node --import tsx`:
// the files' processes get this process's Node options, as under node --test.
import { run } from "node:test";
import { spec, tap } from "node:test/reporters";

const args = process.argv.slice(2);
const concurrencyArg = args.find((arg) => arg.startsWith("--concurrency="));
const concurrency = Number(concurrencyArg?.slice("--concurrency=".length) ?? 2);
const files = args.filter((arg) => !arg.startsWith("--"));
if (files.length === 0 || !Number.isInteger(concurrency) || concurrency < 1) {
  console.error("usage: node --import tsx scripts/run-tests.mjs [--concurrency=N] FILE...");
  process.exit(2);
}

const stream = run({ files, concurrency });
// As node --test: any failed test (a todo test's failure excepted) fails the run.
stream.on("test:fail", (data) => {
  if (!data.todo) process.exitCode = 1;
});
// node --test's default reporters: spec on a terminal, tap otherwise.
stream.compose(process.stdout.isTTY ? spec : tap).pipe(process.stdout);
