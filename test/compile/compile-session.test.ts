import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ChatRoles } from "../../src/compile/chat-roles.ts";
import { defaultUnitBudget } from "../../src/compile/compilation-unit.ts";
import { type CompileSettings, compileSession } from "../../src/compile/compile-session.ts";
import { fixedPipelineRoles, ruleRoles } from "../../src/compile/rule-roles.ts";
import { scopedStore } from "../../src/memory.ts";
import { createOpenAIChat } from "../../src/models/openai-provider.ts";
import { type FakeOpenAIServer, startFakeOpenAIServer } from "../models/fake-openai-server.ts";
import { bikeHistory, day, executionOf, scope } from "./support.ts";

const settings: CompileSettings = {
  maxOpportunities: 8,
  questionsPerOpportunity: 2,
  unit: defaultUnitBudget,
  doubter: { repairRounds: 2, verify: true, window: 12, rawImages: true },
};

describe("compiling a session with the model-free roles", () => {
  it("turns the session's opportunities into verified programs over the history as it stood", async (t) => {
    const memory = await bikeHistory(t);
    const store = memory[scopedStore](scope);
    const report = await compileSession(store, "s2", { roles: ruleRoles, execution: executionOf(memory), settings });
    const kinds = report.admitted.map((program) => program.kind);
    assert.ok(kinds.includes("later-naming"), `kinds ${kinds.join(", ")}`);
    const naming = report.admitted.find((program) => program.kind === "later-naming");
    assert.ok(naming);
    assert.match(naming.question, /rocket/i);
    // Verified on the history up to s2: the photo of s1 and the naming turn of s2 are its evidence.
    const s1 = await store.readRawNodes({ sessionId: (await memory.getSession(scope, "s1")).id });
    assert.ok(naming.evidence.includes(s1[0]?.id ?? ""), "the earlier photo is evidence");
    assert.equal(naming.verification.asOfMs, Date.parse(day(5)));
    assert.ok(
      naming.program.steps.some((step) => step.op === "materialise"),
      "the photo is handed over as pixels",
    );
    assert.deepEqual(naming.sessions.at(-1), "s2");
  });

  it("sees a state update and walks the index's update links for it", async (t) => {
    const memory = await bikeHistory(t);
    const report = await compileSession(memory[scopedStore](scope), "s3", {
      roles: ruleRoles,
      execution: executionOf(memory),
      settings,
    });
    const update = report.admitted.find((program) => program.kind === "state-update");
    assert.ok(update, `admitted ${report.admitted.map((program) => program.kind).join(", ")}`);
    assert.ok(update.program.steps.some((step) => step.op === "temporal-walk"));
  });

  it("admits unverified first plans without the Doubter, and one generic program with the fixed pipeline", async (t) => {
    const memory = await bikeHistory(t);
    const store = memory[scopedStore](scope);
    const execution = executionOf(memory);
    const unverified = await compileSession(store, "s2", {
      roles: ruleRoles,
      execution,
      settings: { ...settings, doubter: { ...settings.doubter, verify: false, repairRounds: 0 } },
    });
    assert.ok(unverified.admitted.length > 0);
    assert.ok(unverified.admitted.every((program) => !program.verification.verified));
    const fixed = await compileSession(store, "s2", { roles: fixedPipelineRoles, execution, settings });
    const shapes = new Set(fixed.admitted.map((program) => program.program.steps.map((step) => step.op).join(">")));
    assert.equal(shapes.size, 1, "every question gets the same pipeline");
  });

  it("compiles nothing from a later session's content: the unit never reaches past its anchor", async (t) => {
    const memory = await bikeHistory(t);
    const report = await compileSession(memory[scopedStore](scope), "s1", {
      roles: ruleRoles,
      execution: executionOf(memory),
      settings,
    });
    for (const program of report.admitted) {
      assert.doesNotMatch(program.question, /rocket|saddle/i);
      assert.ok(program.coverToMs <= Date.parse(day(1)));
    }
  });
});

describe("compiling with the chat roles (fake OpenAI server)", () => {
  let server: FakeOpenAIServer;
  before(async () => {
    server = await startFakeOpenAIServer();
  });
  after(() => server.close());

  /** A recorded chat completion whose message content is `content`. */
  function completion(content: string): string {
    const recorded = server.fixture("chat-completion-json") as { choices: { message: { content: string } }[] };
    return JSON.stringify({
      ...recorded,
      choices: recorded.choices.map((choice) => ({ ...choice, message: { ...choice.message, content } })),
    });
  }

  function roles() {
    const { chat, close } = createOpenAIChat({
      baseUrl: server.url,
      apiKey: "sk-test",
      model: "gpt-4o-mini",
      maxRetries: 0,
    });
    return { roles: new ChatRoles(chat), close };
  }

  it("banks a program the model plans when it passes the Doubter, and refuses invalid and failing answers", async (t) => {
    const memory = await bikeHistory(t);
    const { roles: chatRoles, close } = roles();
    t.after(close);
    const store = memory[scopedStore](scope);
    const good = {
      version: 1,
      output: "pixels",
      steps: [
        { id: "named", op: "lexical", query: "Rocket bike handlebar tape", limit: 12 },
        { id: "shown", op: "image-match", text: "red road bike handlebar tape", limit: 12 },
        { id: "both", op: "union", inputs: ["named", "shown"] },
        { id: "pixels", op: "materialise", input: "both" },
      ],
    };
    const invalid = { version: 1, output: "a", steps: [{ id: "a", op: "shell", command: "cat /etc/passwd" }] };
    const single: CompileSettings = { ...settings, maxOpportunities: 1 };
    // One opportunity, one question: the model answers a valid plan.
    server.replyNext("/chat/completions", {
      body: completion(JSON.stringify({ questions: ["What did Ana name her bike?"] })),
    });
    server.replyNext("/chat/completions", { body: completion(JSON.stringify({ program: good })) });
    const admitted = await compileSession(store, "s2", {
      roles: chatRoles,
      execution: executionOf(memory),
      settings: single,
    });
    assert.equal(admitted.admitted.length, 1, JSON.stringify(admitted));
    assert.equal(admitted.admitted[0]?.question, "What did Ana name her bike?");
    assert.equal(admitted.admitted[0]?.verification.roles, "chat:gpt-4o-mini");

    // Invalid programs on the first plan and both repairs: the Doubter refuses all three; the bank gets nothing.
    server.replyNext("/chat/completions", {
      body: completion(JSON.stringify({ questions: ["What did Ana name her bike?"] })),
    });
    for (let i = 0; i < 3; i++)
      server.replyNext("/chat/completions", { body: completion(JSON.stringify({ program: invalid })) });
    const refused = await compileSession(store, "s2", {
      roles: chatRoles,
      execution: executionOf(memory),
      settings: single,
    });
    assert.equal(refused.admitted.length, 0);
    assert.equal(refused.rejected, 1);
    const repairPrompt = JSON.stringify(server.requestsTo("/chat/completions").at(-1)?.body);
    assert.match(repairPrompt, /unknown-operator/, "the repair request carries the diagnosis");

    // A failing endpoint and an answer that is not JSON: skipped with a warning, nothing banked.
    server.failNext("/chat/completions", "server-error");
    const failed = await compileSession(store, "s2", {
      roles: chatRoles,
      execution: executionOf(memory),
      settings: single,
    });
    assert.equal(failed.admitted.length, 0);
    assert.match(failed.warnings.join("\n"), /questioner chat:gpt-4o-mini failed/);
    server.replyNext("/chat/completions", { body: completion(JSON.stringify({ questions: ["What is Rocket?"] })) });
    server.replyNext("/chat/completions", { body: completion("the program is: lexical(Rocket)") });
    const garbled = await compileSession(store, "s2", {
      roles: chatRoles,
      execution: executionOf(memory),
      settings: single,
    });
    assert.equal(garbled.admitted.length, 0);
    assert.equal(garbled.rejected, 1);
  });
});
