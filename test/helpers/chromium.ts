import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

/**
 * Debian's Chromium, headless, in a fresh profile. As root it needs --no-sandbox; the
 * background-networking flags keep it from calling out of this closed network at every start.
 * `close()` ends the browser and removes its profile.
 */
export async function launchChromium(viewport?: {
	width: number;
	height: number;
}): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
	const profile = mkdtempSync(join(tmpdir(), "pi-gateway-chromium-"));
	const browser = await chromium.launchPersistentContext(profile, {
		executablePath: "/usr/bin/chromium",
		headless: true,
		...(viewport && { viewport }),
		args: [
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			"--disable-quic",
			"--no-first-run",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
		],
	});
	return {
		browser,
		async close() {
			await browser.close();
			rmSync(profile, { recursive: true, force: true });
		},
	};
}
