import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../helpers/chromium.ts";
import { buildConsole } from "../helpers/console-build.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";

// Issue 46 items 1-3 and the phone's fixes, in Debian's Chromium with real pi and the demo model, at
// a desktop's size and a phone's (390×844): the page says when the gateway is gone and back and its
// streams resume; a failed run is "failed" with one error that counts pi's retries; a crashed
// session shows its transcript, why it stopped and Resume; sign-in says the gateway cannot be
// reached; client tool calls are in the inbox, the nav count and the sidebar, answered from a box
// that checks JSON; answers' records sit in their place and answering does not move the reader; the
// docked dialog does not cover the command it asks about; the sidebar keeps its order when a
// session is opened and shows each one's last message or running command. The browser talks to the
// gateway through a TCP proxy, which the test takes away to stop "the gateway".
const token = "console-status-token-0123456789";
const artifacts = resolve(import.meta.dirname, "../../test-artifacts/console-status");
const lookupPrice = {
	name: "lookup_price",
	description: "The price of a product in EUR, by its SKU",
	parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
};
let gw: TestGateway;
let proxy: TcpProxy;
let chrome: Awaited<ReturnType<typeof launchChromium>> | undefined;
let browser: BrowserContext;
let origin: string;
const sizes = { desktop: { width: 1100, height: 900 }, phone: { width: 390, height: 844 } } as const;
type Size = keyof typeof sizes;

beforeAll(async () => {
	buildConsole();
	mkdirSync(artifacts, { recursive: true });
	gw = await startTestGateway({ token });
	proxy = await startProxy(Number(new URL(gw.url).port));
	origin = `http://127.0.0.1:${proxy.port}`;
	chrome = await launchChromium(sizes.desktop);
	browser = chrome.browser;
}, 120_000);

afterAll(async () => {
	await chrome?.close();
	await proxy?.close();
	await gw?.stop();
});

const shot = (page: Page, name: string) => page.screenshot({ path: join(artifacts, `${name}.png`) });

async function open(size: Size, hash = "#/"): Promise<Page> {
	const page = await browser.newPage();
	await page.setViewportSize(sizes[size]);
	await page.goto(`${origin}/console/${hash}`);
	await page.getByLabel("Token or API key").fill(token);
	await page.getByRole("button", { name: "Sign in" }).click();
	await page.getByRole("button", { name: "Sign out" }).waitFor();
	return page;
}

async function axeClean(page: Page, where: string) {
	const result = await new AxeBuilder({ page }).analyze();
	expect(
		result.violations.map((v) => `${where}: ${v.id} ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
		where,
	).toEqual([]);
}

/** The transcript's entries as a person reads them. */
const entries = (page: Page) =>
	page
		.getByRole("log", { name: "Transcript" })
		.locator(":scope > div")
		// biome-ignore lint/performance/useDomNodeTextContent: what a person reads
		.evaluateAll((nodes) => nodes.map((n) => (n as unknown as { innerText: string }).innerText.trim()));

const sessionPage = (id: string) => `#/sessions/${encodeURIComponent(id)}`;
const prompt = (id: string, message: string) =>
	gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message } });
const settled = (id: string) =>
	until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "idle" && true, 30_000);

/** Words of the element's text that the browser broke over two lines. */
const brokenWords = (locator: Locator) =>
	locator.evaluate((el) => {
		const d = (globalThis as unknown as { document: any }).document;
		const broken: string[] = [];
		const walker = d.createTreeWalker(el, 4);
		for (let node = walker.nextNode(); node; node = walker.nextNode()) {
			const text = String(node.textContent);
			for (const m of text.matchAll(/\S+/g)) {
				const range = d.createRange();
				range.setStart(node, m.index);
				range.setEnd(node, (m.index ?? 0) + m[0].length);
				const tops = new Set([...range.getClientRects()].map((r: { top: number }) => Math.round(r.top)));
				if (tops.size > 1) broken.push(m[0]);
			}
		}
		return broken;
	});

describe.each(["desktop", "phone"] as const)("the console at %s size", (size) => {
	it("says at sign-in that the gateway cannot be reached, not 'Failed to fetch'", async () => {
		const page = await browser.newPage();
		await page.setViewportSize(sizes[size]);
		await page.goto(`${origin}/console/`);
		await page.getByLabel("Token or API key").fill(token);
		await proxy.pause();
		try {
			await page.getByRole("button", { name: "Sign in" }).click();
			const alert = page.getByRole("alert");
			await alert.waitFor();
			expect(await alert.innerText()).toMatch(/The gateway cannot be reached/);
			expect(await alert.innerText()).not.toContain("Failed to fetch");
			await shot(page, `${size}-signin-unreachable`);
		} finally {
			await proxy.resume();
		}
		await page.getByRole("button", { name: "Sign in" }).click();
		await page.getByRole("button", { name: "Sign out" }).waitFor();
		await page.close();
	});

	it("shows offline and back within seconds, greys what it last knew, and the stream resumes where it stopped", async () => {
		const id = await gw.session({ name: `${size}-offline` });
		const page = await open(size, sessionPage(id));
		await until(async () => (await page.getByRole("status").allInnerTexts()).includes("Live"), 20_000);
		await page.getByLabel("Message").fill("slow: 40");
		await page.getByLabel("Message").press("Enter");
		await until(async () => (await entries(page)).some((e) => /^Agent\s+1 2 3/.test(e)), 15_000);
		const streams = () => proxy.requests.filter((r) => r.startsWith(`GET /v1/sessions/${id}/events?`)).length;
		const before = streams();
		await proxy.pause();
		try {
			const offline = page.getByText("The gateway cannot be reached.");
			await offline.waitFor({ timeout: 15_000 });
			expect(await page.locator(".stale").count()).toBe(1);
			await shot(page, `${size}-offline`);
			await axeClean(page, `${size} offline`);
		} finally {
			await proxy.resume();
		}
		await page.getByText("Connected again").waitFor({ timeout: 20_000 });
		await shot(page, `${size}-back`);
		expect(await page.locator(".stale").count()).toBe(0);
		const full = Array.from({ length: 40 }, (_, i) => i + 1).join(" ");
		await until(async () => (await entries(page)).some((e) => e.replace(/^Agent\s+/, "") === full), 30_000);
		// Resumed, not replayed: a new stream, from the last event seen.
		expect(streams()).toBeGreaterThan(before);
		const last = proxy.requests.filter((r) => r.startsWith(`GET /v1/sessions/${id}/events?`)).at(-1);
		expect(last).toMatch(/\r\nlast-event-id: [1-9]\d*\r\n|[?&]after=[1-9]/i);
		expect((await entries(page)).filter((e) => e.startsWith("Agent")).length).toBe(1);
		await page.getByText("Connected again").waitFor({ state: "detached", timeout: 15_000 });
		await page.close();
	});

	it("badges a failed last run as failed, with one error that counts pi's retries", async () => {
		const id = await gw.session({ name: `${size}-failing` });
		expect((await prompt(id, "fail: 529 overloaded")).status).toBe(202);
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.lastError?.retries === 3, 60_000);
		const page = await open(size, sessionPage(id));
		const log = page.getByRole("log", { name: "Transcript" });
		await log.getByText(/Failed after 3 retries: 529 overloaded/).waitFor({ timeout: 15_000 });
		expect((await entries(page)).filter((e) => !e.startsWith("You") && e.includes("529 overloaded"))).toHaveLength(1);
		const head = page.locator(".session-head");
		await head.getByText("failed", { exact: true }).waitFor();
		expect(await head.getByText("idle", { exact: true }).count()).toBe(0);
		await shot(page, `${size}-failed`);
		if (size === "phone") await page.getByRole("link", { name: "← Sessions" }).click();
		const row = page
			.getByRole("navigation", { name: "Sessions" })
			.getByRole("link", { name: new RegExp(`${size}-failing`) });
		await row.getByText("failed", { exact: true }).waitFor();
		expect(await row.innerText()).toMatch(/error/);
		await page.close();
	});

	it("shows a crashed session's transcript, why it stopped and Resume", async () => {
		const id = await gw.session({ name: `${size}-crashing` });
		expect(
			(
				await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
					method: "POST",
					json: { message: "echo: before the crash" },
				})
			).status,
		).toBe(200);
		gw.registry.get(id).kill("SIGKILL");
		await until(async () => (await gw.api(`/v1/sessions/${id}`)).body.status === "crashed", 20_000);
		const page = await open(size, sessionPage(id));
		const stopped = page.getByRole("region", { name: "This session crashed" });
		await stopped.waitFor({ timeout: 15_000 });
		expect(await stopped.innerText()).toContain("pi crashed: it was killed by SIGKILL");
		await until(async () => (await entries(page)).some((e) => e.includes("before the crash")), 15_000);
		expect(await page.getByText("Nothing said yet").count()).toBe(0);
		expect(await page.getByLabel("Message").count()).toBe(0);
		await shot(page, `${size}-crashed`);
		await axeClean(page, `${size} crashed`);
		await stopped.getByRole("button", { name: "Resume session" }).click();
		await page.getByLabel("Message").waitFor({ timeout: 30_000 });
		expect((await gw.api(`/v1/sessions/${id}`)).body.pid).not.toBeNull();
		await page.close();
	});

	it("puts client tool calls in the inbox, the nav count and the sidebar, answered with checked JSON or an error", async () => {
		const id = await gw.session({ name: `${size}-tools`, clientTools: [lookupPrice] });
		const page = await open(size);
		const run = gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'tool: lookup_price {"sku":"A-1"}' },
		});
		await page.getByRole("link", { name: /Approvals 1 pending/ }).waitFor({ timeout: 20_000 });
		const row = page
			.getByRole("navigation", { name: "Sessions" })
			.getByRole("link", { name: new RegExp(`${size}-tools`) });
		await row.getByText("1 tool call").waitFor({ timeout: 10_000 });
		await shot(page, `${size}-sidebar-tool-call`);
		await page.getByRole("link", { name: /Approvals/ }).click();
		const card = page
			.getByRole("region", { name: /lookup_price waits for an answer/ })
			.filter({ hasText: `${size}-tools` });
		await card.waitFor();
		await card.getByText("✓ The arguments match the tool's parameters.").waitFor();
		const answer = card.getByLabel("Answer");
		await answer.fill('{"price": 19.9');
		await card.getByText(/Not valid JSON/).waitFor();
		expect(await card.getByRole("button", { name: "Send answer" }).isDisabled()).toBe(true);
		await shot(page, `${size}-tool-call-invalid`);
		await axeClean(page, `${size} inbox tool call`);
		await answer.fill('{"price": 19.9, "currency": "EUR"}');
		await card.getByRole("button", { name: "Send answer" }).click();
		await card.getByText("Answered by admin").waitFor();
		const done = await run;
		expect(done.status).toBe(200);
		expect(done.body.text).toContain('{"price": 19.9, "currency": "EUR"}');
		await shot(page, `${size}-tool-call-answered`);

		// An error answer: the model gets an error result.
		const again = gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'tool: lookup_price {"sku":"B-2"}' },
		});
		const second = page
			.getByRole("region", { name: /lookup_price waits for an answer/ })
			.filter({ hasText: `${size}-tools` })
			.filter({ hasText: "B-2" });
		await second.waitFor({ timeout: 20_000 });
		await second.getByLabel("Answer").fill("No such SKU");
		await second.getByRole("button", { name: "Send as an error" }).click();
		await second.getByText("Answered with an error by admin").waitFor();
		expect((await again).body.text).toMatch(/Error: No such SKU/);
		await page.close();
	});

	it("keeps answers' records in their place, never moves the reader, and docks the dialog below the command it asks about", async () => {
		const id = await gw.session({ name: `${size}-gated`, extensions: ["permission-gate"] });
		for (const n of [1, 2, 3, 4, 5, 6]) {
			const r = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
				method: "POST",
				json: { message: `count: ${n * 15}` },
			});
			expect(r.status).toBe(200);
		}
		const page = await open(size, sessionPage(id));
		await until(async () => (await page.getByRole("status").allInnerTexts()).includes("Live"), 20_000);
		await page.getByLabel("Message").fill("bash: rm -rf ./x");
		await page.getByLabel("Message").press("Enter");
		const dock = page.getByRole("region", { name: "Waiting for an answer" });
		await dock.getByRole("button", { name: "Allow" }).waitFor({ timeout: 20_000 });
		// The command's card is on screen, above the dock, not under it.
		const card = page.getByRole("log", { name: "Transcript" }).locator(".tool").filter({ hasText: "$ rm -rf ./x" });
		await until(async () => {
			const box = await card.boundingBox();
			const docked = await page.locator(".dock").boundingBox();
			return box && docked && box.y >= 0 && box.y + box.height <= docked.y + 1;
		}, 10_000);
		await shot(page, `${size}-dialog-docked`);

		// The reader scrolls up to read; answering leaves them where they are.
		await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
		await page.waitForTimeout(200);
		const firstEntry = page.getByRole("log", { name: "Transcript" }).locator(":scope > div").first();
		const before = (await firstEntry.boundingBox())?.y;
		await dock.getByRole("button", { name: "Allow" }).click();
		await until(async () => (await entries(page)).some((e) => e.startsWith("Answered Allow by admin")), 15_000);
		await until(async () => (await entries(page)).some((e) => /^Agent\s+The command finished/.test(e)), 20_000);
		await shot(page, `${size}-answered-reader-stays`);
		expect((await firstEntry.boundingBox())?.y).toBe(before);
		await page.getByRole("button", { name: "Jump to latest ↓" }).click();
		const shown = await entries(page);
		const command = shown.findIndex((e) => e.startsWith("$ rm -rf ./x"));
		const record = shown.findIndex((e) => e.startsWith("Answered Allow by admin"));
		const finished = shown.findIndex((e) => /^Agent\s+The command finished/.test(e));
		// In its place: after the earlier conversation and the command, before what followed.
		expect(command).toBeGreaterThan(5);
		expect(record).toBeGreaterThan(command);
		expect(record).toBeLessThan(finished);
		expect(shown.findIndex((e) => e.startsWith("Allowed: rm -rf ./x"))).toBeGreaterThan(command);
		await shot(page, `${size}-answered-in-place`);
		await page.close();
	});

	it("keeps the sidebar's order when a session is opened, and previews each one's last message or running command", async () => {
		const older = await gw.session({ name: `${size}-older` });
		await gw.api(`/v1/sessions/${older}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: the older one speaks" },
		});
		const newer = await gw.session({ name: `${size}-newer` });
		await gw.api(`/v1/sessions/${newer}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: the newer one speaks" },
		});
		const at = (await gw.api(`/v1/sessions/${older}`)).body.lastActivityAt;
		const page = await open(size);
		const nav = page.getByRole("navigation", { name: "Sessions" });
		const names = async () =>
			(await nav.locator(".sessions .name").allInnerTexts()).filter(
				(n) => n === `${size}-older` || n === `${size}-newer`,
			);
		await until(async () => (await names()).length === 2, 10_000);
		expect(await names()).toEqual([`${size}-newer`, `${size}-older`]);
		await nav
			.getByRole("link", { name: new RegExp(`${size}-older`) })
			.getByText("the older one speaks")
			.waitFor();
		await nav.getByRole("link", { name: new RegExp(`${size}-older`) }).click();
		await page.getByRole("heading", { name: `${size}-older` }).waitFor();
		await until(async () => (await page.getByLabel("Model").count()) > 0, 10_000);
		await page.waitForTimeout(3500); // a poll of the list (every 3 s) has come back
		expect((await gw.api(`/v1/sessions/${older}`)).body.lastActivityAt).toBe(at);
		if (size === "phone") await page.getByRole("link", { name: "← Sessions" }).click();
		await until(async () => (await names()).length === 2, 10_000);
		expect(await names()).toEqual([`${size}-newer`, `${size}-older`]);
		// The running command is the preview while it runs.
		expect((await prompt(newer, "bash: sleep 4")).status).toBe(202);
		await nav
			.getByRole("link", { name: new RegExp(`${size}-newer`) })
			.getByText("$ sleep 4")
			.waitFor({ timeout: 15_000 });
		await shot(page, `${size}-sidebar`);
		await axeClean(page, `${size} sidebar`);
		await settled(newer);
		await page.close();
	});
});

describe("the console on a phone (390×844)", () => {
	it("keeps the composer short and breaks no word in a heading or a label", async () => {
		const id = await gw.session({ name: "Phone composer and a rather long session name" });
		await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: hello" } });
		const page = await open("phone", sessionPage(id));
		await page.getByLabel("Message").waitFor();
		await until(async () => (await page.getByLabel("Model").count()) > 0, 10_000);
		const composer = await page.locator("form.composer").boundingBox();
		expect(composer?.height).toBeLessThan(130);
		const title = page.getByRole("heading", { name: "Phone composer and a rather long session name" });
		expect(await brokenWords(title)).toEqual([]);
		await shot(page, "phone-composer");
		await page.getByRole("button", { name: "Changes" }).click();
		const label = page.getByText("Changes of");
		await label.waitFor();
		expect(await brokenWords(label)).toEqual([]);
		await shot(page, "phone-changes");
		await page.close();
	});
});
