/**
 * Voice activity from 16 kHz mono PCM, model-free: 30 ms frames whose energy stands clear of an
 * adaptive noise floor and whose zero-crossing rate is in the range of voiced sound, with a hangover
 * so that pauses between words stay inside one utterance. Weaker than a trained detector (music and
 * applause pass as voice), but it runs on any stream in microseconds and never fails.
 */
export interface VoiceActivityConfig {
  /** Energy above the noise floor, in dB, that counts as voice. */
  readonly marginDb: number;
  /** Quieter than this (dBFS) is never voice, however quiet the room. */
  readonly minimumDbfs: number;
  /** Voiced sound crosses zero between these rates (crossings per sample). */
  readonly zeroCrossing: readonly [number, number];
  /** Voice within this many ms of the last voiced frame still counts (pauses between words). */
  readonly hangoverMs: number;
}

export const defaultVoiceActivityConfig: VoiceActivityConfig = Object.freeze({
  marginDb: 12,
  minimumDbfs: -45,
  zeroCrossing: Object.freeze([0.01, 0.35]) as readonly [number, number],
  hangoverMs: 300,
});

const frameSamples = 480;
const frameMs = 30;

/** Running state between calls: the noise floor and the hangover carry across chunks of a stream. */
export class VoiceActivity {
  readonly #config: VoiceActivityConfig;
  /** Starts at a quiet room's level: a stream that opens with speech must not take the speech for noise. */
  #noiseDb = -60;
  #sinceVoiceMs = Number.POSITIVE_INFINITY;

  constructor(config: VoiceActivityConfig = defaultVoiceActivityConfig) {
    this.#config = config;
  }

  /** Milliseconds of voice in this chunk (following the previous one). */
  voicedMs(samples: Int16Array): number {
    let voiced = 0;
    for (let start = 0; start + frameSamples <= samples.length; start += frameSamples) {
      const frame = samples.subarray(start, start + frameSamples);
      if (this.#isVoice(frame)) {
        this.#sinceVoiceMs = 0;
        voiced += frameMs;
      } else {
        this.#sinceVoiceMs += frameMs;
        if (this.#sinceVoiceMs <= this.#config.hangoverMs) voiced += frameMs;
      }
    }
    return voiced;
  }

  #isVoice(frame: Int16Array): boolean {
    let energy = 0;
    let crossings = 0;
    for (let i = 0; i < frame.length; i++) {
      const value = (frame[i] ?? 0) / 32768;
      energy += value * value;
      if (i > 0 && (frame[i - 1] ?? 0) >= 0 !== (frame[i] ?? 0) >= 0) crossings += 1;
    }
    const db = 10 * Math.log10(energy / frame.length + 1e-12);
    // The floor follows quiet frames quickly and loud ones slowly, so speech does not raise it.
    this.#noiseDb += (db < this.#noiseDb ? 0.3 : 0.01) * (db - this.#noiseDb);
    const rate = crossings / frame.length;
    const [low, high] = this.#config.zeroCrossing;
    return db > this.#config.minimumDbfs && db > this.#noiseDb + this.#config.marginDb && rate >= low && rate <= high;
  }
}
