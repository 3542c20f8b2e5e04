/**
 * Whether the unfiltered dense and lexical searches take their one-round-trip path (decision 036:
 * the statement rides on the transaction's opening with its COMMIT; the dense pass scored by the
 * in-process graph), the default, or the transaction of decision 025 / 034 every time. Set by
 * `CAIRN_POSTGRES_ONE_TRIP=off`; the answers are the same either way (dense scores within f32
 * rounding). For A/B runs on one store.
 */
let oneTrip = process.env.CAIRN_POSTGRES_ONE_TRIP !== "off";

/** Switches the one-trip searches on or off for this process (benchmarks and tests); returns the setting before. */
export function usePostgresOneTripSearch(on: boolean): boolean {
  const before = oneTrip;
  oneTrip = on;
  return before;
}

export function oneTripSearch(): boolean {
  return oneTrip;
}
