/**
 * A real browser for the tests that check what a person sees: Debian's chromium driven by playwright-core, headless,
 * with a fresh profile each time and nothing that reaches the network on its own. `.ci/run` installs chromium when
 * it is missing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** The flags chromium runs with in these tests. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  /** A new page of the given width (CSS pixels) and height. */
  page(width?: number, height?: number): Promise<Page>;
  close(): Promise<void>;
}

/** Starts chromium with a fresh user-data-dir, removed again by `close()`. */
export async function startBrowser(): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), "edgeplan-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    offline: true,
  });
  return {
    context,
    page: async (width = 1280, height = 900) => {
      const page = await context.newPage();
      await page.setViewportSize({ width, height });
      return page;
    },
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
