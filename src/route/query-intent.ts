/**
 * Query understanding without a model (issue 19 part 3): what a question's own words say about the
 * evidence it needs. Read at search time only; nothing here looks at stored data.
 */

/**
 * Words that ask about something seen: a photo, a picture, what an image showed. A question without
 * them (and without a query image) is answered by what was said, so the image channel, which ranks
 * image turns by their captions, is only a weak signal for it.
 */
const imageCues =
  /\b(photos?|pictures?|pics?|images?|snapshots?|screenshots?|selfies?|shown|showed|shows|show|look(?:s|ed)? like|see in|seen in|caption(?:s|ed)?|drawing|sketch)\b/i;

/** Whether the question asks about something seen (or comes with a query image). */
export function asksAboutImages(text: string, hasQueryImage: boolean): boolean {
  return hasQueryImage || imageCues.test(text);
}
