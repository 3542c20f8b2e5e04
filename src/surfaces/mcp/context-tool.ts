import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { managerNames } from "../../context/context-manager.ts";
import { memoryEvictionStore } from "../../context/eviction.ts";
import { manageContext } from "../../context/manage-context.ts";
import { managerNamed } from "../../context/managers/index.ts";
import type { Scope } from "../../core/scope.ts";
import type { Memory } from "../../memory.ts";
import { jsonResult, type McpLogEvent, toolResult } from "./tool-result.ts";

export const manageContextInput = {
  messages: z
    .array(z.record(z.unknown()))
    .min(1)
    .describe("The agent's history as OpenAI chat messages (images as base64 data URLs in image_url parts)"),
  manager: z
    .enum(managerNames)
    .optional()
    .describe("Context manager; vera (default) keeps images native beside rendered text"),
  window: z.number().int().min(1_000).optional().describe("Tokens the working context may cost (128000)"),
  trigger: z.number().int().min(0).optional().describe("History cost from which the manager runs (half the window)"),
  keepRecent: z.number().int().min(0).optional().describe("Newest messages kept as they are (8)"),
  trajectoryId: z.string().min(1).max(120).optional().describe("Names the memory sessions of evicted messages"),
};

/**
 * `cairn_manage_context`: an agent host hands over its history and gets back a bounded working context in the same
 * chat format; what is dropped is stored in this scope's memory, where cairn_search finds it again.
 */
export function registerContextTool(
  server: McpServer,
  memory: Memory,
  scope: Scope,
  log: (event: McpLogEvent) => void,
): void {
  server.registerTool(
    "cairn_manage_context",
    {
      title: "Manage the working context",
      description:
        "Turns a long agent history (OpenAI chat messages) into a bounded working context in the same format: older " +
        "text rendered as pages, images kept native (vera), or another manager. Dropped messages are stored in memory " +
        "(find them with cairn_search). Returns the messages, their token cost, and what was dropped.",
      inputSchema: manageContextInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (input) =>
      toolResult("cairn_manage_context", log, async () => {
        const window = input.window ?? 128_000;
        const context = await manageContext(input.messages, {
          manager: managerNamed(input.manager ?? "vera"),
          budget: {
            window,
            trigger: input.trigger ?? Math.floor(window / 2),
            ...(input.keepRecent === undefined ? {} : { keepRecent: input.keepRecent }),
          },
          trajectoryId: input.trajectoryId ?? "mcp",
          evict: memoryEvictionStore(memory, scope),
        });
        const result = {
          manager: context.manager,
          managed: context.managed,
          fits: context.fits,
          cost: context.cost,
          rawCost: context.rawCost,
          dropped: context.dropped.length,
          ...(context.evicted ? { evicted: context.evicted } : {}),
          warnings: context.warnings,
          messages: context.messages,
        };
        return jsonResult(
          result,
          `${context.manager}: ${context.cost.total} tokens (history ${context.rawCost.total}), ${new Set(context.dropped.map((entry) => entry.messageId)).size} messages dropped to memory`,
        );
      }),
  );
}
