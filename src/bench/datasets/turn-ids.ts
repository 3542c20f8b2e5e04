/** What `normaliseTurnId` repaired. */
export type TurnIdRepair = "zero-padded" | "stray colon";

/**
 * A `D<session>:<turn>` id with the typos seen upstream repaired: zero padding (`D30:05` → `D30:5`) and a stray
 * colon (`D:11:26` → `D11:26`). Anything else comes back trimmed but unchanged; resolution decides whether it exists.
 */
export function normaliseTurnId(raw: string): { id: string; repairs: TurnIdRepair[] } {
  const trimmed = raw.trim();
  const match = /^D(:?)(\d+):(\d+)$/i.exec(trimmed);
  if (!match) return { id: trimmed, repairs: [] };
  const [, colon, session = "", turn = ""] = match;
  const id = `D${Number(session)}:${Number(turn)}`;
  const repairs: TurnIdRepair[] = [];
  if (colon) repairs.push("stray colon");
  if (/^0\d/.test(session) || /^0\d/.test(turn)) repairs.push("zero-padded");
  return { id, repairs };
}

/** Several ids written in one evidence string (`"D8:6; D9:17"`, `"D9:1 D4:4"`) split apart; empty parts dropped. */
export function splitEvidence(raw: string): string[] {
  return raw.split(/[;,\s]+/).filter((part) => part !== "");
}

/** The session part of a `D<session>:<turn>` id (`D3:7` → `D3`). */
export function sessionOfTurnId(id: string): string {
  const colon = id.indexOf(":");
  return colon === -1 ? id : id.slice(0, colon);
}
