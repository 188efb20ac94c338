import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../helpers/chromium.ts";
import { buildConsole } from "../helpers/console-build.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { bareMachinePath, hasCommand } from "../helpers/host.ts";

// The console says, on every screen, when the gateway runs no agent because its sandbox is
// unavailable (a machine without bubblewrap, README's start) and what the operator does about it;
// and, when the operator chose --sandbox off, that tools run unconfined. Chromium, found by role.
const dir = mkdtempSync(join(tmpdir(), "pi-gateway-console-sandbox-"));
const started: GatewayProcess[] = [];
let chrome: Awaited<ReturnType<typeof launchChromium>> | undefined;
beforeAll(async () => {
	buildConsole();
	chrome = await launchChromium({ width: 1100, height: 800 });
}, 90_000);
afterAll(async () => {
	await chrome?.close();
	// SIGTERM: each gateway stops its pi children before it exits (a SIGKILL left them writing in
	// the folder being removed); what is still running after that is killed.
	for (const gw of started) gw.child.kill("SIGTERM");
	await Promise.race([Promise.all(started.map((gw) => gw.exited)), new Promise((r) => setTimeout(r, 20_000))]);
	killAll(started);
	rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

async function bannerOf(extra: string[]) {
	const home = join(dir, extra.join("") || "auto");
	const env = { PATH: bareMachinePath(join(home, "bin"), ["bwrap"]) };
	const gw = await launchGateway({ root: home, port: 0, readme: true, env, extra });
	started.push(gw);
	const page = await (chrome as NonNullable<typeof chrome>).browser.newPage();
	await page.goto(`${gw.url}/console`);
	await page.getByLabel("Token or API key").fill(gw.token);
	await page.getByRole("button", { name: "Sign in" }).click();
	await page.getByRole("button", { name: "Sign out" }).waitFor();
	return page;
}

describe.runIf(hasCommand("bwrap") && hasCommand("chromium"))("the console and the sandbox", () => {
	it("without bubblewrap: an alert that no session can start, with the fix", async () => {
		const page = await bannerOf([]);
		const alert = page.getByRole("alert").filter({ hasText: "No session can start" });
		await alert.waitFor();
		expect(await alert.textContent()).toMatch(
			/No session can start: the sandbox is unavailable \(bwrap is not installed: not found on PATH\)\. The operator must install bubblewrap .* or start it with --sandbox off/,
		);
		await page.close();
	});

	it("with --sandbox off: a status that tools run unconfined", async () => {
		const page = await bannerOf(["--sandbox=off"]);
		const status = page.getByRole("status").filter({ hasText: "Sandbox off" });
		await status.waitFor();
		expect(await status.textContent()).toMatch(/agents' tools run unconfined as the gateway's user/);
		expect(await page.getByRole("alert").filter({ hasText: "No session can start" }).count()).toBe(0);
		await page.close();
	});
});
