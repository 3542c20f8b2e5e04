/**
 * Rounds a score or similarity to three decimals, as recorded in audit events, route traces and
 * utilisation: enough to compare two values by eye, short enough to read. The comparator judges on
 * its rounded features, so an audit event shows exactly what the decision saw.
 */
export function roundForRecord(value: number): number {
  return Math.round(value * 1000) / 1000;
}
