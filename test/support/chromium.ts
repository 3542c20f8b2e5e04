import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";

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

/**
 * A dashboard page signed in as `tenant`/`user` on a server without auth, and the page errors it
 * reports (a test asserts it stays empty). Navigation is the caller's, after any set-up of its own.
 */
export async function dashboardPage(
  browser: Browser,
  connection: { readonly tenant: string; readonly user: string },
): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, locale: "en-US" });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  await page.addInitScript(
    (saved) => localStorage.setItem("cairn.dashboard.connection", JSON.stringify({ apiKey: "", ...saved })),
    connection,
  );
  return { page, problems };
}
