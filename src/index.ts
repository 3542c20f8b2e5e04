export type { ContextBudget, ContextManager, ManagerName } from "./context/context-manager.ts";
export { defaultContextBudget, managerNames } from "./context/context-manager.ts";
export type { EvictionPointer, EvictionStore } from "./context/eviction.ts";
export { memoryEvictionStore } from "./context/eviction.ts";
export type { ImageTokenRule } from "./context/image-tokens.ts";
export { imageTokens } from "./context/image-tokens.ts";
export type { ManageContextCallOptions, WorkingContext } from "./context/manage-context.ts";
export { manageContext } from "./context/manage-context.ts";
export { chatSummariser, extractiveSummariser, managerNamed } from "./context/managers/index.ts";
export type { RenderSettings } from "./context/render/page-layout.ts";
export { defaultRenderSettings } from "./context/render/page-layout.ts";
export { TokenLedger } from "./context/token-ledger.ts";
export type { Trajectory, TrajectoryMessage } from "./context/trajectory.ts";
export type { ContentPart, ContextMessage } from "./context/working-context.ts";
export * from "./core/errors.ts";
export type { Scope } from "./core/scope.ts";
export type { Budget } from "./evidence/budget.ts";
export { defaultBudget } from "./evidence/budget.ts";
export type { EvidenceItem, EvidencePack } from "./evidence/evidence-pack.ts";
export type { IngestLimits } from "./ingest/limits.ts";
export { defaultIngestLimits } from "./ingest/limits.ts";
export type { RememberOptions, RememberResult } from "./ingest/remember.ts";
export type { ImageInput, SessionInput, TurnInput } from "./ingest/session-input.ts";
export type {
  AddSessionOptions,
  AddSessionResult,
  AppendTurnsOptions,
  LexicalRepair,
  MemoryOptions,
  SearchOptions,
  SearchQuery,
} from "./memory.ts";
export { Memory } from "./memory.ts";
export { createHashModels } from "./models/hash-provider.ts";
export { createModels } from "./models/profiles.ts";
export type { ChatModel, ImageEmbedder, ImageReader, Models, TextEmbedder } from "./models/provider.ts";
export type { SearchConfig } from "./route/search-config.ts";
export { defaultSearchConfig } from "./route/search-config.ts";
export { isPostgresUrl, openPostgresStore, openSqliteStore, openStore } from "./store/open-store.ts";
export type { PostgresStore, PostgresStoreOptions } from "./store/postgres/postgres-store.ts";
export type * from "./store/records.ts";
export type { SqliteStore, SqliteStoreOptions } from "./store/sqlite/sqlite-store.ts";
export type { ScopedStore, Store } from "./store/store.ts";
