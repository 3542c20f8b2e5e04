import type { UnitBudget } from "./compile/compilation-unit.ts";
import type { CompileConfig } from "./compile/compile-config.ts";
import type { CompileRoles } from "./compile/roles.ts";
import type { Budget } from "./evidence/budget.ts";
import type { RouteConfig } from "./evidence/route-trace.ts";
import type { IngestLimits } from "./ingest/limits.ts";
import type { IndexBounds, MaintenanceConfig } from "./maintain/config.ts";
import type { RelationJudge } from "./maintain/judge.ts";
import type { Models } from "./models/provider.ts";
import type { SearchConfig } from "./route/search-config.ts";
import type { IndexTextConfig } from "./store/index-text.ts";
import type { Store } from "./store/store.ts";
import type { Detector } from "./video/perception/detector.ts";
import type { VideoConfigInput } from "./video/video-config.ts";

/** The options and results of the `Memory` facade (src/memory.ts), kept apart so the facade reads as its operations. */

export interface MemoryOptions {
  /**
   * Folder of the embedded store (created on first use), or a `postgres://…` URL for the Postgres
   * store. Ignored when `store` is given.
   */
  readonly path?: string;
  /** Another `Store` backend; Memory closes it on `close()`. */
  readonly store?: Store;
  readonly models: Models;
  /** Close `models` with the memory. Off by default: whoever made the models closes them (they may be shared). */
  readonly ownsModels?: boolean;
  readonly budget?: Partial<Budget>;
  readonly search?: Partial<Omit<SearchConfig, "routing">> & { readonly routing?: Partial<RouteConfig> };
  readonly limits?: Partial<IngestLimits>;
  /**
   * What each raw node is searchable by besides its own text: speaker, session date, neighbouring turns'
   * gist, image text (`defaultIndexTextConfig`). Read at write time; raw evidence is never changed.
   */
  readonly indexText?: Partial<IndexTextConfig>;
  /** Bounds of the active index and RAMU's settings (DESIGN §4 defaults). */
  readonly maintenance?: Partial<Omit<MaintenanceConfig, "bounds">> & { readonly bounds?: Partial<IndexBounds> };
  /** The relation judge: the model-free comparator by default; `"chat"` uses `models.chat` (an LLM judge). */
  readonly judge?: "comparator" | "chat" | RelationJudge;
  /**
   * Prospective compilation (PMMC): when to compile, the routing gate (α_route 0.60, δ 0.05), r = 2
   * repairs, and the roles: the model-free rules (default), `"chat"` (an LLM through `models.chat`),
   * or roles given.
   */
  readonly compile?: Partial<Omit<CompileConfig, "unit">> & {
    readonly unit?: Partial<UnitBudget>;
    readonly roles?: "rules" | "chat" | CompileRoles;
  };
  /** Let `addSession` fetch `url` images. Off by default. */
  readonly allowRemoteImages?: boolean;
  readonly fetch?: typeof fetch;
  /**
   * A scope whose vectors other models made (the store records each space's model): `"error"` (the
   * default) refuses searches and writes with a `ModelMismatchError` naming both; `"warn"` goes on
   * without those vectors and says so in the result's warnings.
   */
  readonly onModelMismatch?: "error" | "warn";
  /** Milliseconds since the epoch: stamps appended turns and notes given no time. `Date.now` by default. */
  readonly now?: () => number;
  /**
   * Video streams (`watch`): the face/object detector (by default `@vladmandic/human`, loaded on
   * first use and closed with the memory) and the pipeline's settings.
   */
  readonly video?: { readonly detector?: Detector; readonly config?: VideoConfigInput };
}

export interface AddSessionOptions {
  /** Folder that image `path`s are relative to (the JSONL file's folder for the CLI). */
  readonly baseDir?: string;
  /**
   * Run the image readers (OCR) on new images; on by default. The video pipeline turns it off for
   * person crops and reads its key frames itself.
   */
  readonly readImages?: boolean;
}

export interface AppendTurnsOptions extends AddSessionOptions {
  /**
   * Names this append: a part key the session already has makes the call a duplicate (a retry). By
   * default the key is the hash of the turns, so appending the same turns again is one append.
   */
  readonly partKey?: string;
}

export interface AddSessionResult {
  readonly sessionId: string;
  readonly sessionKey: string;
  readonly rawNodeIds: readonly string[];
  /** Index entries this session created or changed. */
  readonly entryIds: readonly string[];
  /** What maintenance did: one index action per segment, and capacity fallbacks taken. */
  readonly maintenance: { readonly actions: readonly string[]; readonly overflowRepairs: number };
  /** The identical session was already stored; nothing was written. */
  readonly duplicate: boolean;
  readonly warnings: readonly string[];
}
