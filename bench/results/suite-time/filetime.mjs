// Preloaded into every test-file process (node --test passes its execArgv on): at exit, appends the file's
// wall time and CPU time (its own, and that of the child processes it waited for) to $FILETIME_OUT.
import { appendFileSync, readFileSync } from "node:fs";
const file = process.argv[1] ?? "";
const out = process.env.FILETIME_OUT;
if (out && /\.test\.ts$/.test(file)) {
  const start = performance.timeOrigin;
  process.on("exit", (code) => {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const tick = 100;
    const children = (Number(fields[13]) + Number(fields[14])) / tick; // cutime + cstime
    const self = process.cpuUsage();
    appendFileSync(out, `${JSON.stringify({ file: file.replace(/^.*\/test\//, "test/"), start, end: Date.now(), wall: (Date.now() - start) / 1000, cpuSelf: (self.user + self.system) / 1e6, cpuChildren: children, code })}\n`);
  });
}
