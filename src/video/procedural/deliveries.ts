import { createHmac } from "node:crypto";
import type { NotifyConfig } from "./notifier.ts";

/** What a delivery carries: the notification as the log stores it. */
export interface VideoNotification {
  readonly id: string;
  readonly scope: { readonly tenant: string; readonly user: string };
  readonly ruleId: string;
  readonly rule: string;
  readonly stream: string;
  readonly at: string;
  readonly text: string;
  readonly value: number;
  /** Raw nodes (key frames) behind it: `GET /v1/video/items/{id}/frames` gives their pixels. */
  readonly evidence: readonly string[];
}

export interface DeliveryResult {
  readonly channel: string;
  readonly ok: boolean;
  readonly attempts: number;
  readonly status: number | null;
  readonly error: string | null;
}

/**
 * Where deliveries go: every webhook (HMAC-SHA256 of the body in `x-cairn-signature`, retried with
 * doubling back-off on network errors and 5xx/429) and every live listener (the SSE stream).
 */
export class NotificationHub {
  readonly #listeners = new Set<(notification: VideoNotification) => void>();
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: { fetch?: typeof fetch; sleep?: (ms: number) => Promise<void> } = {}) {
    this.#fetch = options.fetch ?? fetch;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Live notifications of every scope; the listener filters by scope. Returns the unsubscribe. */
  subscribe(listener: (notification: VideoNotification) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async deliver(notification: VideoNotification, config: NotifyConfig): Promise<DeliveryResult[]> {
    const results: DeliveryResult[] = [];
    for (const listener of this.#listeners) listener(notification);
    if (this.#listeners.size > 0) results.push({ channel: "sse", ok: true, attempts: 1, status: null, error: null });
    for (const webhook of config.webhooks) results.push(await this.#post(webhook, notification, config));
    return results;
  }

  async #post(
    webhook: { url: string; secret: string },
    notification: VideoNotification,
    config: NotifyConfig,
  ): Promise<DeliveryResult> {
    const body = JSON.stringify(notification);
    const signature = `sha256=${createHmac("sha256", webhook.secret).update(body).digest("hex")}`;
    let status: number | null = null;
    let error: string | null = null;
    for (let attempt = 1; attempt <= config.webhookAttempts; attempt++) {
      try {
        const response = await this.#fetch(webhook.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-cairn-signature": signature,
            "x-cairn-delivery": notification.id,
          },
          body,
          signal: AbortSignal.timeout(config.webhookTimeoutMs),
        });
        status = response.status;
        await response.arrayBuffer().catch(() => undefined);
        if (response.ok) return { channel: webhook.url, ok: true, attempts: attempt, status, error: null };
        error = `HTTP ${response.status}`;
        if (response.status < 500 && response.status !== 429)
          return { channel: webhook.url, ok: false, attempts: attempt, status, error };
      } catch (caught) {
        error = caught instanceof Error ? caught.message : String(caught);
      }
      if (attempt < config.webhookAttempts) await this.#sleep(config.retryBaseMs * 2 ** (attempt - 1));
    }
    return { channel: webhook.url, ok: false, attempts: config.webhookAttempts, status, error };
  }
}

/** Checks a webhook body against its `x-cairn-signature` header (for receivers). */
export function verifySignature(body: string, header: string, secret: string): boolean {
  return header === `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}
