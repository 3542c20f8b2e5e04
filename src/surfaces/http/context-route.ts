import { z } from "zod";
import { managerNames } from "../../context/context-manager.ts";
import { memoryEvictionStore } from "../../context/eviction.ts";
import { imageTokenRuleKinds, imageTokenRuleNamed } from "../../context/image-tokens.ts";
import { manageContext } from "../../context/manage-context.ts";
import { managerNamed } from "../../context/managers/index.ts";
import { defineRoute, type ResponseDoc, type Route } from "./route.ts";

const budgetSchema = z
  .object({
    window: z.number().int().min(1_000).optional().describe("tokens the working context may cost (128000)"),
    trigger: z.number().int().min(0).optional().describe("history cost from which the manager runs (64000)"),
    keepRecent: z.number().int().min(0).optional().describe("newest messages kept as they are (8)"),
    managedShare: z
      .number()
      .min(0.05)
      .max(1)
      .optional()
      .describe("most of the trigger the managed history may fill (0.5)"),
  })
  .strict();

export const contextBody = z
  .object({
    messages: z
      .array(z.record(z.unknown()))
      .min(1)
      .describe(
        "the trajectory: OpenAI chat messages (content parts with base64 data-URL images, tool_calls, tool_call_id) or Cairn's form (text, images [{data, caption, kind}], artifacts [table|chart])",
      ),
    manager: z.enum(managerNames).optional().describe("context manager (vera)"),
    budget: budgetSchema.optional(),
    scale: z.number().min(0.25).max(2).optional().describe("rendered page scale (0.75)"),
    imageTokens: z.enum(imageTokenRuleKinds).optional().describe("image token rule (openai-tile)"),
    trajectoryId: z.string().min(1).max(120).optional().describe("names the memory sessions of evicted messages"),
    evict: z.boolean().optional().describe("write dropped messages to this scope's memory (true)"),
    force: z
      .boolean()
      .optional()
      .describe("manage even when the history costs less than the trigger, e.g. to preview a manager (false)"),
  })
  .strict();

const contextResponse = z
  .object({
    manager: z.enum(managerNames),
    role: z.enum(["boundary-control", "manager"]),
    managed: z.boolean(),
    fits: z.boolean(),
    messages: z.array(z.record(z.unknown())).describe("the working context, ready for an OpenAI-compatible chat API"),
    forms: z
      .array(z.enum(["native", "rendered", "summary", "pointer"]))
      .describe(
        "per message: kept as it was, rendered pages (with native visuals beside them), a summary, a pointer to memory",
      ),
    cost: z.object({ textTokens: z.number(), imageTokens: z.number(), total: z.number(), images: z.number() }),
    rawCost: z.object({ textTokens: z.number(), imageTokens: z.number(), total: z.number(), images: z.number() }),
    dropped: z.array(z.object({ messageId: z.string(), what: z.string(), imageIds: z.array(z.string()) })),
    evicted: z.object({ prefix: z.string(), messages: z.number(), written: z.number(), images: z.number() }).optional(),
    warnings: z.array(z.string()),
  })
  .describe("A bounded working context: messages, cost, what was dropped and where it went");

/** POST /v1/context: a trajectory in, a managed working context out; evictions go to the caller's scope. */
export function contextRoute(errors: Readonly<Record<number, ResponseDoc>>): Route {
  return defineRoute(
    {
      method: "post",
      operationId: "manageContext",
      path: "/v1/context",
      summary: "Turn an agent trajectory into a bounded working context (VERA and five other managers)",
      tag: "context",
      scoped: true,
      body: contextBody,
      responses: {
        200: { description: "the working context", schema: contextResponse },
        ...errors,
        413: { description: "body larger than the server's limit", schema: errors[400]?.schema },
        415: { description: "not JSON", schema: errors[400]?.schema },
      },
    },
    async ({ c, memory, scope, body }) => {
      const context = await manageContext(body.messages, {
        manager: managerNamed(body.manager ?? "vera"),
        ...(body.budget ? { budget: body.budget } : {}),
        ...(body.scale ? { render: { scale: body.scale } } : {}),
        ...(body.imageTokens ? { imageRule: imageTokenRuleNamed(body.imageTokens) } : {}),
        trajectoryId: body.trajectoryId ?? "http",
        ...(body.force ? { force: true } : {}),
        ...(body.evict === false ? {} : { evict: memoryEvictionStore(memory, scope) }),
      });
      return c.json({
        manager: context.manager,
        role: context.role,
        managed: context.managed,
        fits: context.fits,
        messages: context.messages,
        forms: context.items.map((item) => item.form),
        cost: context.cost,
        rawCost: context.rawCost,
        dropped: context.dropped,
        ...(context.evicted ? { evicted: context.evicted } : {}),
        warnings: context.warnings,
      });
    },
  );
}
