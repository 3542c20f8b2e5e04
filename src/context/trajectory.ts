/** The history a context manager transforms: an agent's messages, in order, with their images and artifacts. */

export type TrajectoryRole = "system" | "user" | "assistant" | "tool";

/** What an image shows, as the agent got it; VERA keeps every kind native. */
export type ImageKind = "image" | "screenshot" | "crop" | "document";

export interface TrajectoryImage {
  /** Unique within the trajectory (`<message id>#img<n>` unless given). */
  readonly id: string;
  readonly data: Uint8Array;
  readonly mediaType: string;
  readonly width: number;
  readonly height: number;
  readonly kind: ImageKind;
  /** What the image shows in words; what a text-only manager keeps of it. */
  readonly caption?: string;
}

export interface TableArtifact {
  readonly kind: "table";
  readonly id: string;
  readonly title?: string;
  readonly columns: readonly string[];
  readonly rows: readonly (readonly (string | number)[])[];
}

export interface ChartArtifact {
  readonly kind: "chart";
  readonly id: string;
  readonly title?: string;
  readonly chart: "bar" | "line";
  readonly labels: readonly string[];
  readonly series: readonly { readonly name: string; readonly values: readonly number[] }[];
}

/** An analytical output that is structure, not prose: VERA keeps it visual. */
export type Artifact = TableArtifact | ChartArtifact;

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** JSON text, as the model produced it. */
  readonly arguments: string;
}

export interface TrajectoryMessage {
  /** Unique within the trajectory (`m<index>` unless given); evidence and eviction pointers use it. */
  readonly id: string;
  readonly role: TrajectoryRole;
  /** Speaker or tool name. */
  readonly name?: string;
  readonly text: string;
  readonly images: readonly TrajectoryImage[];
  readonly artifacts: readonly Artifact[];
  readonly toolCalls: readonly ToolCall[];
  /** For a `tool` message: the call it answers. */
  readonly toolCallId?: string;
  readonly time?: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export interface Trajectory {
  readonly id: string;
  readonly messages: readonly TrajectoryMessage[];
}

/** A role and name label kept for provenance wherever a message is rendered or summarised. */
export function messageLabel(message: TrajectoryMessage, options: { readonly time?: boolean } = {}): string {
  const parts: string[] = [message.role];
  if (message.name) parts.push(message.name);
  if (message.role === "tool" && message.toolCallId) parts.push(`call ${message.toolCallId}`);
  if (message.time && options.time !== false) parts.push(compactTime(message.time));
  return parts.join(" · ");
}

/** `2023-05-08T13:56:02.000Z` → `2023-05-08 13:56 UTC`: minutes are enough for provenance, and fewer glyphs read better. */
export function compactTime(time: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/.exec(time);
  if (!match) return time;
  const zone = match[3] === undefined ? "" : match[3] === "Z" ? " UTC" : ` ${match[3]}`;
  return `${match[1]} ${match[2]}${zone}`;
}

/** A tool call as one line of text: `name(arguments)`. */
export function toolCallText(call: ToolCall): string {
  return `${call.name}(${call.arguments})`;
}

/** A table as aligned monospace text, the form a text-only manager or a rendered page carries. */
export function tableText(table: TableArtifact): string {
  const cells = [table.columns.map(String), ...table.rows.map((row) => row.map(String))];
  const widths = table.columns.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? "").length)));
  const line = (row: readonly string[]) =>
    `| ${widths.map((width, column) => (row[column] ?? "").padEnd(width)).join(" | ")} |`;
  const rule = `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`;
  const [head = [], ...body] = cells;
  return [...(table.title ? [`Table: ${table.title}`] : []), line(head), rule, ...body.map(line)].join("\n");
}

/** A chart's data as text (what a text-only manager keeps of a chart). */
export function chartText(chart: ChartArtifact): string {
  const header = `Chart (${chart.chart})${chart.title ? `: ${chart.title}` : ""}`;
  const series = chart.series.map(
    (entry) => `${entry.name}: ${chart.labels.map((label, i) => `${label}=${entry.values[i] ?? ""}`).join(", ")}`,
  );
  return [header, ...series].join("\n");
}

export function artifactText(artifact: Artifact): string {
  return artifact.kind === "table" ? tableText(artifact) : chartText(artifact);
}

/** The message's words as a text-only reader gets them: text, tool calls, artifacts as text, image captions. */
export function messageText(message: TrajectoryMessage, options: { readonly captions: boolean }): string {
  const parts: string[] = [];
  if (message.text) parts.push(message.text);
  for (const call of message.toolCalls) parts.push(`[tool call ${call.id}] ${toolCallText(call)}`);
  for (const artifact of message.artifacts) parts.push(artifactText(artifact));
  if (options.captions) {
    for (const image of message.images)
      parts.push(`[${image.kind} ${image.id}${image.caption ? `: ${image.caption}` : ""}]`);
  }
  return parts.join("\n");
}
