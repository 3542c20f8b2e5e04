import type { ContextManager } from "../context-manager.ts";
import { nativeItems } from "../native-items.ts";

/** Boundary control: the whole history, unchanged (it may exceed the window; the result says so). */
export const noCompression: ContextManager = {
  name: "none",
  role: "boundary-control",
  async manage(request) {
    const items = [];
    for (const message of request.messages) items.push(...(await nativeItems(message, request)));
    return { items, dropped: [], warnings: [] };
  },
};

/** Boundary control: the managed history is removed (a reset); only the recent messages stay. */
export const discardAll: ContextManager = {
  name: "discard-all",
  role: "boundary-control",
  async manage(request) {
    return {
      items: [],
      dropped: request.messages.map((message) => ({
        messageId: message.id,
        what: "message" as const,
        imageIds: message.images.map((image) => image.id),
      })),
      warnings: [],
    };
  },
};
