// A module hook for tests: prints every URL resolved, one per line on stderr, prefixed "resolved ".
import { register } from "node:module";

register(
  `data:text/javascript,${encodeURIComponent(
    'export async function resolve(specifier, context, next) { const result = await next(specifier, context); process.stderr.write("resolved " + result.url + "\\n"); return result; }',
  )}`,
);
