/**
 * The compact routing text of an entry: who spoke, what images showed, and the session's
 * text, trimmed to a character budget. Model-free and deterministic, so an entry can be
 * rebuilt exactly from its remaining raw nodes after a partial forget.
 */
export interface RoutingSource {
  readonly speaker: string | null;
  readonly text: string;
  readonly captions: readonly string[];
}

export function buildRoutingText(nodes: readonly RoutingSource[], maxChars = 1_200): string {
  const speakers = [...new Set(nodes.map((node) => node.speaker).filter((speaker): speaker is string => !!speaker))];
  const captions = nodes.flatMap((node) => node.captions).filter(Boolean);
  const parts: string[] = [];
  if (speakers.length > 0) parts.push(`speakers: ${speakers.join(", ")}`);
  if (captions.length > 0) parts.push(`images: ${captions.join("; ")}`);
  parts.push(
    nodes
      .map((node) => node.text.trim())
      .filter(Boolean)
      .join(" / "),
  );
  const text = parts.join(" | ");
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
