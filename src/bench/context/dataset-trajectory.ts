import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import type { Trajectory, TrajectoryImage, TrajectoryMessage } from "../../context/trajectory.ts";
import type { BenchDataset, BenchQuestion } from "../dataset.ts";

/** The questions asked after message `after` (an index into the trajectory). */
export interface Checkpoint {
  readonly after: number;
  readonly history: string;
  readonly questions: readonly BenchQuestion[];
}

export interface ReplayTrajectory {
  readonly trajectory: Trajectory;
  readonly checkpoints: readonly Checkpoint[];
  /** `<history>|<dataset turn id>` → message ids carrying that turn. */
  readonly turnMessages: ReadonlyMap<string, readonly string[]>;
  /** `<history>|<dataset image id>` → trajectory image ids. */
  readonly imageIds: ReadonlyMap<string, readonly string[]>;
}

/**
 * One dataset as one long agent trajectory: its histories one after another, every turn a message (the user side
 * `user`, the other speaker `assistant`, names kept), images with pixels as native images, caption-only images
 * as their caption in the text. A history's questions are asked at the end of that history; where a dataset pools
 * separately evaluated histories into one (LCMP's concepts), at the end of the question's own session.
 */
export async function datasetTrajectory(dataset: BenchDataset): Promise<ReplayTrajectory> {
  const messages: TrajectoryMessage[] = [];
  const checkpoints: Checkpoint[] = [];
  const turnMessages = new Map<string, string[]>();
  const imageIds = new Map<string, string[]>();
  for (const history of dataset.histories) {
    const endOfSession = new Map<string, number>();
    const firstSpeaker = history.sessions[0]?.turns[0]?.speaker;
    for (const session of history.sessions) {
      for (const [turnIndex, turn] of session.turns.entries()) {
        const id = `${history.id}/${session.session}/${turnIndex}`;
        const metadata = turn.metadata ?? {};
        const role =
          turn.role === "assistant" || (turn.role === undefined && turn.speaker !== firstSpeaker)
            ? "assistant"
            : "user";
        const images: TrajectoryImage[] = [];
        const captions: string[] = [];
        const datasetImages = Array.isArray(metadata.datasetImageIds) ? metadata.datasetImageIds.map(String) : [];
        for (const [imageIndex, image] of (turn.images ?? []).entries()) {
          if ("path" in image && history.baseDir !== undefined) {
            const data = new Uint8Array(await readFile(path.join(history.baseDir, image.path)));
            const { width = 0, height = 0, format = "png" } = await sharp(data).metadata();
            const imageId = `${id}#img${imageIndex}`;
            images.push({
              id: imageId,
              data,
              mediaType: `image/${format}`,
              width,
              height,
              kind: "image",
              ...(image.caption ? { caption: image.caption } : {}),
            });
            const datasetImage = datasetImages[imageIndex];
            if (datasetImage !== undefined) push(imageIds, `${history.id}|${datasetImage}`, imageId);
          } else if (image.caption) captions.push(`[image: ${image.caption}]`);
        }
        const text = [turn.text ?? "", ...captions].filter((part) => part.trim() !== "").join("\n");
        messages.push({
          id,
          role,
          text,
          images,
          artifacts: [],
          toolCalls: [],
          ...(turn.speaker ? { name: turn.speaker } : {}),
          ...((turn.time ?? session.time) ? { time: turn.time ?? session.time } : {}),
        });
        if (typeof metadata.datasetTurnId === "string")
          push(turnMessages, `${history.id}|${metadata.datasetTurnId}`, id);
      }
      endOfSession.set(session.session, messages.length - 1);
    }
    const end = messages.length - 1;
    const pooled = dataset.name === "lcmp";
    const byTime = new Map<number, BenchQuestion[]>();
    for (const question of history.questions) {
      const own = pooled
        ? Math.max(-1, ...question.gold.sessions.map((session) => endOfSession.get(session) ?? -1))
        : -1;
      const after = own >= 0 ? own : end;
      byTime.set(after, [...(byTime.get(after) ?? []), question]);
    }
    for (const [after, questions] of [...byTime].sort((a, b) => a[0] - b[0]))
      checkpoints.push({ after, history: history.id, questions });
  }
  return { trajectory: { id: dataset.name, messages }, checkpoints, turnMessages, imageIds };
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
