import type { Artifact, Trajectory, TrajectoryImage, TrajectoryMessage } from "../../src/context/trajectory.ts";
import { drawPng } from "../support/fixtures.ts";

const words =
  "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango".split(
    " ",
  );

/** Deterministic filler text of about `count` words, with a marker word that identifies it. */
export function sentence(marker: string, count: number, seed = 0): string {
  const out = [marker];
  for (let index = 0; index < count; index++) out.push(words[(index * 7 + seed * 3) % words.length] ?? "x");
  return `${out.join(" ")}.`;
}

let pngCache: Buffer | undefined;

export async function image(id: string, caption: string): Promise<TrajectoryImage> {
  pngCache ??= await drawPng({ shape: "square", color: "#2a6", size: 512 });
  return {
    id,
    data: new Uint8Array(pngCache),
    mediaType: "image/png",
    width: 512,
    height: 512,
    kind: "screenshot",
    caption,
  };
}

function message(fields: Partial<TrajectoryMessage> & Pick<TrajectoryMessage, "id" | "role">): TrajectoryMessage {
  return { text: "", images: [], artifacts: [], toolCalls: [], ...fields };
}

/**
 * An agent loop: a user task, then rounds of assistant tool call → tool result (some with a screenshot, a table
 * or a chart) → assistant note. Every message's text starts with a marker `w<round>x<kind>`.
 */
export async function agentTrajectory(rounds: number, options: { wordsPerResult?: number } = {}): Promise<Trajectory> {
  const messages: TrajectoryMessage[] = [
    message({ id: "sys", role: "system", text: "You are a research agent." }),
    message({
      id: "task",
      role: "user",
      name: "Ana",
      text: "Find the quarterly revenue figures and the product screenshots.",
    }),
  ];
  for (let round = 0; round < rounds; round++) {
    const callId = `call${round}`;
    messages.push(
      message({
        id: `a${round}`,
        role: "assistant",
        text: sentence(`w${round}xplan`, 12, round),
        toolCalls: [{ id: callId, name: "browse", arguments: JSON.stringify({ page: round }) }],
      }),
    );
    const artifacts: Artifact[] = [];
    if (round % 4 === 1) {
      artifacts.push({
        kind: "table",
        id: "t",
        title: `revenue ${round}`,
        columns: ["month", "revenue"],
        rows: [
          ["Jan", 100 + round],
          ["Feb", 200 + round],
        ],
      });
    }
    if (round % 4 === 3) {
      artifacts.push({
        kind: "chart",
        id: "c",
        chart: "bar",
        title: `units ${round}`,
        labels: ["Q1", "Q2"],
        series: [{ name: "units", values: [round, round * 2] }],
      });
    }
    messages.push(
      message({
        id: `t${round}`,
        role: "tool",
        name: "browse",
        toolCallId: callId,
        text: sentence(`w${round}xresult`, options.wordsPerResult ?? 150, round),
        images: round % 2 === 0 ? [await image(`t${round}#img0`, `screenshot of page ${round}`)] : [],
        artifacts,
      }),
    );
  }
  messages.push(message({ id: "final", role: "user", name: "Ana", text: "Summarise what you found." }));
  return { id: "agent", messages };
}
