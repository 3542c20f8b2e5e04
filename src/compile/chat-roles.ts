import { isRecord } from "../core/narrow.ts";
import type { ChatModel } from "../models/provider.ts";
import type { RawNode } from "../store/records.ts";
import type { CompilationUnit, Opportunity } from "./opportunity.ts";
import { operators, programLimits } from "./program.ts";
import type { CompileRoles, PlanRequest } from "./roles.ts";

/** Turns of the unit shown to the model, the evidence first. */
const promptTurns = 24;

/**
 * The Questioner and Planner as an LLM (PMMC Q_θ, P_φ) through the chat model's JSON-schema output.
 * Answers are untrusted: the question list is parsed here, the program by the validator; a wrong
 * or failing answer never reaches the bank (the Doubter refuses it, or the compilation skips it).
 */
export class ChatRoles implements CompileRoles {
  readonly id: string;
  readonly #chat: ChatModel;

  constructor(chat: ChatModel) {
    this.#chat = chat;
    this.id = `chat:${chat.id}`;
  }

  async ask(opportunity: Opportunity, unit: CompilationUnit): Promise<string[]> {
    return this.#chat.completeJson(
      [
        {
          role: "system",
          content:
            "You predict questions a user may later ask an assistant about their own history. Given a stretch of " +
            "conversation and an evidence opportunity, write up to 2 short questions whose answer needs exactly the " +
            "marked evidence. Do not answer them.",
        },
        {
          role: "user",
          content: `${describeOpportunity(opportunity)}\n\nHistory:\n${describeUnit(unit, opportunity)}`,
        },
      ],
      {
        name: "questions",
        jsonSchema: {
          type: "object",
          additionalProperties: false,
          required: ["questions"],
          properties: { questions: { type: "array", items: { type: "string" }, maxItems: 4 } },
        },
        parse: parseQuestions,
      },
    );
  }

  async plan(request: PlanRequest): Promise<unknown> {
    const repair = request.previous
      ? `\n\nYour previous program failed verification (${request.previous.diagnosis.problem}: ${request.previous.diagnosis.detail}):\n${JSON.stringify(request.previous.program)}\nRepair it.`
      : "";
    return this.#chat.completeJson(
      [
        {
          role: "system",
          content:
            `You plan retrieval programs over a memory store. A program is JSON {"version":1,"steps":[...],"output":"<step id>"}; ` +
            `each step has an id and an op from: ${operators.join(", ")}. Searches (lexical {query, limit, field?}, dense ` +
            `{query, limit}, image-match {text | image, limit}) start the flow; filter {input, sessions?|speakers?|fromMs?|toMs?|entity?}, ` +
            `expand {input, window}, temporal-walk {input, direction: earlier|later|both, depth}, latest {input, keep, entity?}, ` +
            `top-k {input, k} and materialise {input} (hand over original images; terminal) read one step; union and ` +
            `intersect {inputs} read several. Limits are required and at most ${programLimits.maxFanOut}; windows at most ` +
            `${programLimits.maxWindow}; depth at most ${programLimits.maxDepth}. Entities must be ones listed.`,
        },
        {
          role: "user",
          content:
            `Question: ${request.question}\n${describeOpportunity(request.opportunity)}\nKnown entities: ` +
            `${[...request.unit.entities].slice(0, 40).join(", ")}${repair}`,
        },
      ],
      {
        name: "program",
        jsonSchema: {
          type: "object",
          additionalProperties: false,
          required: ["program"],
          properties: {
            program: {
              type: "object",
              required: ["version", "steps", "output"],
              properties: {
                version: { type: "integer" },
                steps: { type: "array", items: { type: "object" }, maxItems: programLimits.maxSteps },
                output: { type: "string" },
              },
            },
          },
        },
        parse: (value) => {
          if (!isRecord(value) || !isRecord(value.program)) throw new Error("the answer has no program object");
          return value.program;
        },
      },
    );
  }
}

function parseQuestions(value: unknown): string[] {
  const questions = isRecord(value) ? value.questions : undefined;
  if (!Array.isArray(questions) || !questions.every((question) => typeof question === "string")) {
    throw new Error(`questions must be a list of text, got ${JSON.stringify(questions)}`);
  }
  return questions;
}

function describeOpportunity(opportunity: Opportunity): string {
  return (
    `Opportunity: ${opportunity.kind}; evidence turns ${opportunity.evidence.join(", ")}; needs ` +
    `${opportunity.modalities.join(" and ")}` +
    `${opportunity.entities.length > 0 ? `; about ${opportunity.entities.join(", ")}` : ""}.`
  );
}

function describeUnit(unit: CompilationUnit, opportunity: Opportunity): string {
  const evidence = new Set(opportunity.evidence);
  const turns = [
    ...unit.nodes.filter((node) => evidence.has(node.id)),
    ...unit.nodes.filter((node) => !evidence.has(node.id)),
  ];
  return turns
    .slice(0, promptTurns)
    .map((node) => `${evidence.has(node.id) ? "* " : "  "}${describeNode(node)}`)
    .join("\n");
}

function describeNode(node: RawNode): string {
  const images = node.images
    .map((image) => image.caption ?? image.derivedText)
    .filter(Boolean)
    .join("; ");
  return `[${node.id}] ${node.time} ${node.speaker ?? "?"}: ${node.text}${images ? ` [image: ${images}]` : ""}`;
}
