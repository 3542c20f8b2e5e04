import { scopeKey } from "../core/scope.ts";
import type { IndexEntry } from "../store/index-records.ts";
import type { ScopedStore } from "../store/store.ts";
import type { LinkedEntries } from "./router.ts";

/**
 * What a routed search reads of the active index, kept between searches per scope and labelled with
 * the index version it was read at: any write or forget to the scope bumps the version, and the
 * next search drops everything cached for the scope before it reads again (so a forgotten entry's
 * digest does not outlive the forget in this cache either).
 */

/** The scope's active entries, cached per scope until the index version changes. */
export class ActiveEntriesCache {
  readonly #entries = new Map<string, { version: number; entries: readonly IndexEntry[] }>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** `version` is the index version the caller just read (`indexStatus`), so the cache costs no extra read. */
  async get(scoped: ScopedStore, version: number): Promise<readonly IndexEntry[]> {
    const key = scopeKey(scoped.scope);
    const cached = this.#entries.get(key);
    if (cached && cached.version === version) return cached.entries;
    const state = await scoped.readIndex({ activeOnly: true });
    const entries = [...state.entries.values()];
    this.#entries.set(key, { version: state.version, entries });
    const oldest = this.#entries.keys().next();
    if (this.#entries.size > this.#capacity && !oldest.done) this.#entries.delete(oldest.value);
    return entries;
  }

  /** Forgets what is cached for a scope (after a forget: its digests may quote what was deleted). */
  drop(scoped: ScopedStore): void {
    this.#entries.delete(scopeKey(scoped.scope));
  }
}

interface ScopeLinks {
  readonly version: number;
  /** A host's guests (not merged ones), least recently used first. */
  readonly guests: Map<string, readonly IndexEntry[]>;
  /** Entries read by id (earlier states); `null` for an id the index does not hold. */
  readonly named: Map<string, IndexEntry | null>;
}

/** What a host's guest list counts against the bound: its entries, and at least 1 (an empty list is held too). */
function weight(guests: readonly IndexEntry[]): number {
  return Math.max(1, guests.length);
}

/**
 * The entries a routed search reaches through links (a host's overflowed guests, an entry's earlier
 * states), cached per scope and index version. Without it every search re-read the same guests
 * from the store and decoded their digests again: at 100k raw nodes that was 13% of a default
 * search's CPU (decision 033). The nearest-guest preselection (a host can hold hundreds of guests)
 * is done here, over the cached vectors; the store only reads.
 *
 * Bounded by the number of entries held over all scopes (`capacity`): the least recently used hosts
 * go first. A host with more guests than the whole capacity is read and not kept.
 */
export class LinkedEntriesCache {
  readonly #scopes = new Map<string, ScopeLinks>();
  readonly #capacity: number;
  readonly #scopeCapacity: number;
  #held = 0;

  /** `capacity`: entries held over all scopes; `scopes`: scopes remembered at once. */
  constructor(capacity: number, scopes: number) {
    this.#capacity = capacity;
    this.#scopeCapacity = scopes;
  }

  /** Entries held now, over every scope (for tests and the bound). */
  get size(): number {
    return this.#held;
  }

  /** A reader for one search; `version` is the index version that search read. */
  reader(scoped: ScopedStore, version: number): LinkedEntries {
    return async (options) => {
      const links = this.#scope(scopeKey(scoped.scope), version);
      // What is cached is taken first: filing what the store returns may evict it.
      const guests = new Map<string, readonly IndexEntry[]>();
      for (const host of options.hosts) {
        const cached = this.#touch(links, host);
        if (cached) guests.set(host, cached);
      }
      const named = new Map<string, IndexEntry | null>();
      for (const id of options.ids) if (links.named.has(id)) named.set(id, links.named.get(id) ?? null);
      const missingHosts = options.hosts.filter((host) => !guests.has(host));
      const missingIds = options.ids.filter((id) => !named.has(id));
      if (missingHosts.length > 0 || missingIds.length > 0) {
        const read = await scoped.readLinkedEntries({ hosts: missingHosts, ids: missingIds });
        const fresh = this.#keep(links, read, missingHosts, missingIds);
        for (const [host, list] of fresh.guests) guests.set(host, list);
        for (const [id, entry] of fresh.named) named.set(id, entry);
      }
      const out = new Map<string, IndexEntry>();
      for (const host of options.hosts) {
        const list = guests.get(host) ?? [];
        const chosen = options.nearest ? nearestGuests(list, options.nearest.vector, options.nearest.perHost) : list;
        for (const entry of chosen) out.set(entry.id, entry);
      }
      for (const id of options.ids) {
        const entry = named.get(id);
        if (entry) out.set(entry.id, entry);
      }
      return [...out.values()];
    };
  }

  /** Forgets what is cached for a scope (after a forget: its digests may quote what was deleted). */
  drop(scoped: ScopedStore): void {
    const key = scopeKey(scoped.scope);
    const links = this.#scopes.get(key);
    if (links) this.#drop(key, links);
  }

  #scope(key: string, version: number): ScopeLinks {
    const cached = this.#scopes.get(key);
    if (cached && cached.version === version) return cached;
    if (cached) this.#drop(key, cached);
    const oldest = this.#scopes.entries().next();
    if (this.#scopes.size >= this.#scopeCapacity && !oldest.done) this.#drop(oldest.value[0], oldest.value[1]);
    const links: ScopeLinks = { version, guests: new Map(), named: new Map() };
    this.#scopes.set(key, links);
    return links;
  }

  #drop(key: string, links: ScopeLinks): void {
    for (const guests of links.guests.values()) this.#held -= weight(guests);
    this.#held -= links.named.size;
    this.#scopes.delete(key);
  }

  #touch(links: ScopeLinks, host: string): readonly IndexEntry[] | undefined {
    const guests = links.guests.get(host);
    if (guests === undefined) return undefined;
    links.guests.delete(host);
    links.guests.set(host, guests);
    return guests;
  }

  /** Files what the store returned under the hosts and ids asked for; returns it for this read too. */
  #keep(
    links: ScopeLinks,
    read: readonly IndexEntry[],
    hosts: readonly string[],
    ids: readonly string[],
  ): { guests: Map<string, IndexEntry[]>; named: Map<string, IndexEntry | null> } {
    const guests = new Map<string, IndexEntry[]>(hosts.map((host) => [host, []]));
    const named = new Map<string, IndexEntry | null>(ids.map((id) => [id, null]));
    for (const entry of read) {
      if (entry.host && entry.status !== "merged") guests.get(entry.host)?.push(entry);
      if (named.has(entry.id)) named.set(entry.id, entry);
    }
    for (const [host, list] of guests) {
      if (weight(list) > this.#capacity) continue;
      this.#makeRoom(weight(list));
      links.guests.set(host, list);
      this.#held += weight(list);
    }
    for (const [id, entry] of named) {
      this.#makeRoom(1);
      links.named.set(id, entry);
      this.#held++;
    }
    return { guests, named };
  }

  /** Evicts least recently used hosts (then named entries), oldest scope first, until `count` more fit. */
  #makeRoom(count: number): void {
    for (const links of this.#scopes.values()) {
      while (this.#held + count > this.#capacity) {
        const host = links.guests.entries().next();
        if (!host.done) {
          links.guests.delete(host.value[0]);
          this.#held -= weight(host.value[1]);
          continue;
        }
        const id = links.named.keys().next();
        if (id.done) break;
        links.named.delete(id.value);
        this.#held--;
      }
      if (this.#held + count <= this.#capacity) return;
    }
  }
}

/**
 * A host's `perHost` guests closest to `vector` by cosine (guests whose vector has another length
 * are not compared), ties by id: the preselection before every signal scores the few.
 */
function nearestGuests(guests: readonly IndexEntry[], vector: Float32Array, perHost: number): readonly IndexEntry[] {
  const comparable = guests.filter((entry) => entry.vector.length === vector.length);
  if (comparable.length <= perHost) return comparable;
  return comparable
    .map((entry) => ({ entry, similarity: cosineOf(vector, entry.vector) }))
    .sort((a, b) => b.similarity - a.similarity || a.entry.id.localeCompare(b.entry.id))
    .slice(0, perHost)
    .map(({ entry }) => entry);
}

/** Cosine of two vectors of one length, normalised here (as the store's SQL did): stored vectors need not be unit. */
function cosineOf(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let index = 0; index < a.length; index++) {
    const x = a[index] as number;
    const y = b[index] as number;
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  return aa === 0 || bb === 0 ? 0 : dot / Math.sqrt(aa * bb);
}
