import type { Frame } from "../gateway.ts";

/**
 * The detector seam of perception: faces with identity descriptors and COCO objects per frame. The
 * local one runs `@vladmandic/human` in a worker; tests pass a fake behind the same interface.
 */
export type Box = readonly [x: number, y: number, width: number, height: number];

export interface FaceDetection {
  readonly box: Box;
  readonly score: number;
  /** Identity descriptor (1024-d for FaceRes), compared by cosine. */
  readonly descriptor: Float32Array;
}

export interface ObjectDetection {
  readonly label: string;
  readonly score: number;
  readonly box: Box;
}

export interface FrameDetections {
  readonly faces: readonly FaceDetection[];
  readonly objects: readonly ObjectDetection[];
}

export interface Detector {
  readonly id: string;
  detect(frames: readonly Frame[]): Promise<FrameDetections[]>;
  close(): Promise<void>;
}
