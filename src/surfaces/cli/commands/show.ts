import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { InputError } from "../../../core/errors.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { renderRawNode } from "../render.ts";

export const showHelp =
  "cairn show <raw-node-id> [--save-images DIR]   original text, images and provenance of one raw node";

export async function show(
  options: CommonOptions,
  id: string | undefined,
  saveImages: string | undefined,
): Promise<number> {
  if (!id) throw new InputError("raw-node-id", "give a raw node id: cairn show <raw-node-id>");
  const memory = await openMemory(options, { mustExist: true });
  try {
    const scope = scopeOf(options);
    const node = await memory.getRawNode(scope, id);
    const saved: string[] = [];
    if (saveImages) {
      // Like `curl --create-dirs`: naming a folder that is not there yet is what a person does.
      if (node.images.length > 0) await mkdir(saveImages, { recursive: true });
      for (const image of node.images) {
        if (!image.hash) continue;
        const { data, mediaType } = await memory.getBlob(scope, image.hash);
        const path = join(saveImages, `${image.hash}.${mediaType.split("/")[1]}`);
        await writeFile(path, data);
        saved.push(path);
      }
    }
    output(options, { ...node, saved }, () =>
      [renderRawNode(node), ...saved.map((path) => `saved ${path}`)].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}
