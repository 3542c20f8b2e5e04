import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's chromium, or the one CAIRN_CHROMIUM names: the browser every dashboard test drives. */
export const chromiumPath = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";

/** A test's `skip` option: false when the browser is there, else the reason and how to get it. */
export const chromiumSkip: string | false = existsSync(chromiumPath)
  ? false
  : `Chromium not found at ${chromiumPath} (install Debian's chromium, or set CAIRN_CHROMIUM)`;

/** Headless Chromium as the tests run it (no sandbox as root, /tmp instead of a small /dev/shm). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
    headless: true,
  });
}
