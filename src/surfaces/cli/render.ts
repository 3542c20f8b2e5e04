import type { EvidencePack } from "../../evidence/evidence-pack.ts";
import type { RawNode } from "../../store/records.ts";

/** Human rendering of an evidence pack: what was found, from where, through which channels, at what cost. */
export function renderPack(pack: EvidencePack): string {
  const lines: string[] = [];
  const query = [
    pack.query.text && `"${pack.query.text}"`,
    pack.query.image && `image ${pack.query.image.hash.slice(0, 12)}`,
  ]
    .filter(Boolean)
    .join(" + ");
  lines.push(`query ${query}  (channels: ${pack.channelsUsed.join(", ") || "none"})`);
  if (pack.items.length === 0) lines.push("  no relevant evidence found");
  pack.items.forEach((item, index) => {
    const where = item.provenance;
    const channels = Object.entries(item.channels)
      .map(([name, hit]) => `${name}#${hit?.rank}`)
      .join(" ");
    lines.push(
      `${String(index + 1).padStart(2)}. [${where.sessionKey} turn ${where.turn} · ${where.time.slice(0, 16).replace("T", " ")} · ${where.speaker ?? "?"}] ${item.rawNodeId}`,
    );
    if (item.text) lines.push(`    ${truncate(item.text, 200)}`);
    for (const image of item.images) {
      const about = [image.caption, image.derivedText && `ocr: ${truncate(image.derivedText.replace(/\s+/g, " "), 60)}`]
        .filter(Boolean)
        .join(" · ");
      lines.push(
        `    🖼  ${image.hash.slice(0, 12)} ${image.mediaType} ${image.width}×${image.height} ${image.bytes} B  ${about}`,
      );
    }
    for (const image of item.imagesAsText) {
      lines.push(
        `    🖼  (as text${image.hash ? "" : ", no pixels"}) ${image.caption ?? ""} ${image.derivedText ?? ""}`.trimEnd(),
      );
    }
    if (item.imagesCut > 0) lines.push(`    (${item.imagesCut} image(s) cut by the image budget)`);
    const relevance = item.relevance == null ? "" : ` · relevance ${item.relevance.toFixed(2)}`;
    lines.push(`    score ${item.score.toFixed(4)} via ${channels}${relevance} · ${item.textTokens} tokens`);
  });
  const { used, limits, cut } = pack.budget;
  lines.push(
    `budget: ${used.rawNodes}/${limits.rawNodes} raw nodes, ${used.images}/${limits.images} images, ${used.textTokens}/${limits.textTokens} text tokens` +
      (Object.values(cut).some((count) => count > 0)
        ? `; cut ${Object.entries(cut)
            .filter(([, count]) => count > 0)
            .map(([dimension, count]) => `${count} by ${dimension}`)
            .join(", ")}`
        : ""),
  );
  lines.push(`time: ${pack.timings.totalMs.toFixed(1)} ms (embedding ${pack.timings.embedMs.toFixed(1)} ms)`);
  for (const warning of pack.warnings) lines.push(`warning: ${warning}`);
  return lines.join("\n");
}

export function renderRawNode(node: RawNode): string {
  const lines = [
    `${node.id}  session ${node.sessionKey} (${node.sessionId}) turn ${node.turn}`,
    `time ${node.time}  speaker ${node.speaker ?? "-"}  role ${node.role ?? "-"}  source ${node.source ?? "-"}`,
  ];
  if (node.uri) lines.push(`uri ${node.uri}`);
  lines.push("", node.text || "(no text)");
  for (const image of node.images) {
    lines.push(
      (image.hash
        ? `image ${image.ordinal}: ${image.hash} ${image.mediaType} ${image.width}×${image.height} ${image.bytes} B`
        : `image ${image.ordinal}: caption only (no pixels)`) + (image.origin ? ` from ${image.origin}` : ""),
    );
    if (image.caption) lines.push(`  caption: ${image.caption}`);
    if (image.derivedText) lines.push(`  ocr: ${image.derivedText.replace(/\s+/g, " ")}`);
  }
  return lines.join("\n");
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
