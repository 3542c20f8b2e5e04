import { InputError } from "../core/errors.ts";
import type { IngestLimits } from "./limits.ts";

/**
 * Checks an untrusted session value before the schema sees it, with an explicit stack rather than
 * recursion (100,000 levels of nesting must be an `InputError`, not a `RangeError`):
 * - every string, object keys included, is well-formed UTF-16: a lone surrogate cannot be stored as
 *   UTF-8 and would come back as U+FFFD, so it is refused where it is;
 * - every `metadata` value is plain JSON (no cycles, BigInt, functions, symbols, `undefined`,
 *   non-finite numbers or class instances such as `Date`, which `JSON.stringify` would drop or
 *   change silently), at most `maxMetadataDepth` deep and `maxMetadataBytes` serialized.
 * Byte arrays (inline image data) are not walked. Cycles outside metadata are refused too.
 */
export function checkInputValues(value: unknown, limits: IngestLimits, location = ""): void {
  interface Frame {
    readonly value: unknown;
    readonly path: string;
    /** Depth inside the nearest `metadata` (1 = the metadata object), 0 outside metadata. */
    readonly metadataDepth: number;
    readonly depth: number;
    /** Set when the frame leaves an object: it is no longer an ancestor. */
    readonly exit?: true;
  }
  const ancestors = new Set<object>();
  const stack: Frame[] = [{ value, path: "", metadataDepth: 0, depth: 0 }];
  const field = (path: string) => `${location}${path.replace(/^\./, "") || "session"}`;
  while (stack.length > 0) {
    const frame = stack.pop() as Frame;
    const { value: current, path, metadataDepth, depth } = frame;
    if (frame.exit) {
      ancestors.delete(current as object);
      continue;
    }
    if (typeof current === "string") {
      if (hasLoneSurrogate(current)) throw new InputError(field(path), loneSurrogateReason);
      continue;
    }
    if (metadataDepth > 0) checkJsonScalar(current, field(path));
    if (typeof current !== "object" || current === null) continue;
    if (metadataDepth === 0 && ArrayBuffer.isView(current)) continue;
    if (ancestors.has(current)) throw new InputError(field(path), "refers to itself (a cycle); send plain JSON");
    if (metadataDepth > limits.maxMetadataDepth) {
      throw new InputError(
        field(metadataPath(path)),
        `is nested more than ${limits.maxMetadataDepth} levels deep (limits.maxMetadataDepth)`,
      );
    }
    // A session is a few levels deep besides its metadata; anything deeper is not a session.
    if (metadataDepth === 0 && depth > maxSessionDepth) throw new InputError(field(path), "is nested too deep");
    if (metadataDepth > 0 && !Array.isArray(current) && !isPlainObject(current)) {
      const kind = (current as { constructor?: { name?: string } }).constructor?.name ?? "object";
      throw new InputError(
        field(path),
        `is a ${kind}, not a JSON value; convert it to a string, number or plain object`,
      );
    }
    ancestors.add(current);
    stack.push({ value: current, path, metadataDepth, depth, exit: true });
    const entries: [string, unknown][] = Array.isArray(current)
      ? current.map((item, index) => [`[${index}]`, item])
      : Object.entries(current).map(([key, item]) => {
          if (hasLoneSurrogate(key)) throw new InputError(field(`${path}.${key}`), `key ${loneSurrogateReason}`);
          return [`.${key}`, item];
        });
    // Pushed in reverse so the first offending field in reading order is the one reported.
    for (let index = entries.length - 1; index >= 0; index--) {
      const [step, item] = entries[index] as [string, unknown];
      const childPath = `${path}${step}`;
      const childDepth = metadataDepth > 0 ? metadataDepth + 1 : step === ".metadata" && path !== "" ? 1 : 0;
      stack.push({ value: item, path: childPath, metadataDepth: childDepth, depth: depth + 1 });
    }
  }
  checkMetadataSizes(value, limits, field);
}

/** session → turns → turn → images → image is 4 levels; room to spare, nowhere near a stack's worth. */
const maxSessionDepth = 8;

const loneSurrogateReason = "contains a lone UTF-16 surrogate (not valid Unicode text)";

/** True when `text` has a surrogate code unit that is not half of a pair. */
export function hasLoneSurrogate(text: string): boolean {
  return /\p{Cs}/u.test(text);
}

function checkJsonScalar(value: unknown, field: string): void {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "object":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new InputError(field, `is ${value}, which JSON cannot hold`);
      return;
    default:
      throw new InputError(field, `is a ${typeof value}, not a JSON value`);
  }
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** The path of the `metadata` a deep path lies in, so a depth error names the turn's metadata. */
function metadataPath(path: string): string {
  const at = path.indexOf(".metadata");
  return at < 0 ? path : path.slice(0, at + ".metadata".length);
}

/** After the walk every metadata value is finite, acyclic, shallow JSON, so serializing it is safe. */
function checkMetadataSizes(value: unknown, limits: IngestLimits, field: (path: string) => string): void {
  if (typeof value !== "object" || value === null) return;
  const turns = (value as { turns?: unknown }).turns;
  if (!Array.isArray(turns)) return;
  for (const [index, turn] of turns.entries()) {
    const metadata = typeof turn === "object" && turn !== null ? (turn as { metadata?: unknown }).metadata : undefined;
    if (metadata === undefined) continue;
    const bytes = Buffer.byteLength(JSON.stringify(metadata) ?? "");
    if (bytes > limits.maxMetadataBytes) {
      throw new InputError(
        field(`.turns[${index}].metadata`),
        `is ${bytes} bytes as JSON, limit is ${limits.maxMetadataBytes} (limits.maxMetadataBytes)`,
      );
    }
  }
}
