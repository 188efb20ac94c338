import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../helpers/chromium.ts";
import { buildConsole } from "../helpers/console-build.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// The console as a product (issue 32), in Debian's Chromium with real pi and the demo model: the
// sessions sidebar beside the open session (a list, then a full-screen session on a phone), the
// conversation with tool cards and jump-to-latest, the changes as a review whose every changed
// line the browser itself finds at its place, approvals styled by meaning with a tested countdown,
// creating with a model and a folder picked, and axe on every screen in light and dark, phone and
// desktop, each screen's screenshot into test-artifacts/console/. Found by role and name only.
const token = "console-review-token-0123456789";
const artifacts = resolve(import.meta.dirname, "../../test-artifacts/console");
let gw: TestGateway;
let chrome: Awaited<ReturnType<typeof launchChromium>> | undefined;
let browser: BrowserContext;
let page: Page;
const requested: string[] = [];
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

beforeAll(async () => {
	buildConsole();
	mkdirSync(artifacts, { recursive: true });
	gw = await startTestGateway({ ...noPool, token });
	chrome = await launchChromium(desktop);
	browser = chrome.browser;
	page = await browser.newPage();
	page.on("request", (r) => requested.push(new URL(r.url()).pathname));
}, 90_000);

afterAll(async () => {
	await chrome?.close();
	await gw?.stop();
});

type Win = {
	document: { documentElement: { scrollWidth: number; clientWidth: number }; activeElement: unknown };
	scrollY: number;
	innerHeight: number;
};

/** axe (no serious or critical violation), nothing sideways, and a screenshot: in light and dark, on this size. */
async function checkScreen(p: Page, name: string, size: "desktop" | "phone", ready?: () => Promise<unknown>) {
	await p.setViewportSize(size === "desktop" ? desktop : phone);
	for (const scheme of ["light", "dark"] as const) {
		await p.emulateMedia({ colorScheme: scheme });
		await ready?.();
		await p.waitForTimeout(150);
		const result = await new AxeBuilder({ page: p }).analyze();
		const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
		expect(
			serious.map((v) => `${v.id} ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
			`${name} ${size} ${scheme}`,
		).toEqual([]);
		const sideways = await p.evaluate(() => {
			const root = (globalThis as unknown as Win).document.documentElement;
			return root.scrollWidth - root.clientWidth;
		});
		expect(sideways, `${name} ${size} ${scheme} scrolls sideways`).toBeLessThanOrEqual(0);
		// What the screen shows (a full-page picture would draw the docked header and composer mid-page).
		await p.screenshot({ path: join(artifacts, `${name}-${size}-${scheme}.png`) });
	}
	await p.emulateMedia({ colorScheme: "light" });
	await p.setViewportSize(desktop);
}

async function signIn(p: Page) {
	await p.goto(`${gw.url}/console/`);
	await p.getByLabel("Token or API key").fill(token);
	await p.getByRole("button", { name: "Sign in" }).click();
	await p.getByRole("button", { name: "Sign out" }).waitFor();
}

const sidebar = (p: Page) => p.getByRole("navigation", { name: "Sessions" });
const sessionNames = async (p: Page) =>
	(await sidebar(p).getByRole("listitem").allInnerTexts()).map((t) => t.split("\n")[0]?.trim());
type Styled = { getComputedStyle(el: unknown): { fontFamily: string; color: string; backgroundColor: string } };
const fontOf = (l: Locator) => l.evaluate((el) => (globalThis as unknown as Styled).getComputedStyle(el).fontFamily);
const colours = (l: Locator) =>
	l.evaluate((el) => {
		const s = (globalThis as unknown as Styled).getComputedStyle(el);
		return { color: s.color, background: s.backgroundColor };
	});

describe("the console as a product", () => {
	let older: string;
	let newer: string;

	it("sign-in says where the token is and that API keys work", async () => {
		await page.goto(`${gw.url}/console/`);
		const field = page.getByLabel("Token or API key");
		await field.waitFor();
		// The field's description, as a screen reader reads it with the field.
		const help = await page.getByText(/^The gateway's token is in/).textContent();
		expect(await field.getAttribute("aria-describedby")).toBe("credential-help");
		expect(help).toContain("~/.pi-gateway/token");
		expect(help).toContain("An API key works too");
		await checkScreen(page, "sign-in", "desktop");
		await checkScreen(page, "sign-in", "phone");
		await signIn(page);
	}, 120_000);

	it("lists sessions in a sidebar beside the open one: newest activity first, a relative <time>, filtered by status", async () => {
		older = await gw.session({ name: "older" });
		newer = await gw.session({ name: "newer" });
		await until(async () => (await sessionNames(page)).join() === "newer,older", 10_000);
		const times = await sidebar(page)
			.locator("time")
			.evaluateAll((els) => els.map((e) => [e.getAttribute("datetime"), e.textContent]));
		expect(times).toHaveLength(2);
		for (const [at, text] of times) {
			expect(Number.isNaN(Date.parse(String(at)))).toBe(false);
			expect(text).toMatch(/now|sec|min/);
		}
		// Activity in the older one moves it to the top.
		expect(
			(await gw.api(`/v1/sessions/${older}/prompt?wait=true`, { method: "POST", json: { message: "echo: hi" } }))
				.status,
		).toBe(200);
		await until(async () => (await sessionNames(page)).join() === "older,newer", 10_000);

		const filter = sidebar(page).getByLabel("Show");
		await filter.selectOption({ label: "Waiting for an answer" });
		await sidebar(page).getByText("None of them.").waitFor();
		await filter.selectOption({ label: "Idle" });
		await until(async () => (await sessionNames(page)).length === 2, 5000);
		await filter.selectOption({ label: "All sessions" });
		await checkScreen(page, "sessions", "desktop");

		// Desktop: the list stays beside the session it opened.
		await sidebar(page)
			.getByRole("link", { name: /^newer/ })
			.click();
		await page.getByRole("heading", { name: "newer", level: 1 }).waitFor();
		const list = await sidebar(page).boundingBox();
		const session = await page.getByRole("article").boundingBox();
		expect(list && session && list.x + list.width <= session.x + 1).toBe(true);
		expect(
			await sidebar(page)
				.getByRole("link", { name: /^newer/ })
				.getAttribute("aria-current"),
		).toBe("page");

		// A phone: the list is the page; a session opens full screen with a way back.
		await page.setViewportSize(phone);
		await page.goto(`${gw.url}/console/#/`);
		await sidebar(page)
			.getByRole("link", { name: /^older/ })
			.click();
		await page.getByRole("heading", { name: "older", level: 1 }).waitFor();
		expect(await sidebar(page).count()).toBe(0);
		await page.getByRole("link", { name: "← Sessions" }).click();
		await sidebar(page).waitFor();
		expect(await page.getByRole("article").count()).toBe(0);
		// "Sessions" and "Approvals" stay on one line each at 390 px.
		for (const name of ["Sessions", "Approvals"]) {
			const box = await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name }).boundingBox();
			expect(box?.height ?? 99, name).toBeLessThan(40);
		}
		await checkScreen(page, "sessions", "phone");
	}, 120_000);

	it("shows tool calls as cards: the command and its output in monospace, folded past a few lines", async () => {
		await page.goto(`${gw.url}/console/#/sessions/${older}`);
		await page.getByLabel("Message").fill("bash: seq 1 30");
		await page.getByLabel("Message").press("Enter");
		const log = page.getByRole("log", { name: "Transcript" });
		const card = log.getByText("$ seq 1 30", { exact: true });
		await card.waitFor({ timeout: 15_000 });
		expect(await fontOf(card)).toMatch(/mono/i);
		const show = log.getByRole("button", { name: "Show all 30 lines" });
		await show.waitFor({ timeout: 15_000 });
		const output = log.getByText(/^1\n2\n3/);
		// biome-ignore lint/performance/useDomNodeTextContent: the lines as shown, folded or not
		expect((await output.innerText()).trimEnd().split("\n")).toHaveLength(8);
		expect(await fontOf(output)).toMatch(/mono/i);
		await show.click();
		// biome-ignore lint/performance/useDomNodeTextContent: the lines as shown, folded or not
		expect((await output.innerText()).trimEnd().split("\n")).toHaveLength(30);
		await log.getByRole("button", { name: "Show less" }).waitFor();
		await until(async () => (await page.getByRole("button", { name: "Send" }).count()) === 1, 15_000);
	});

	it("keeps the composer at hand and leaves a reader who scrolled up where they are, with a jump to the latest", async () => {
		// A long conversation: 80 lines of text.
		const lines = Array.from({ length: 80 }, (_, i) => `line ${i + 1}`).join("\n");
		await page.getByLabel("Message").fill(`echo: ${lines}`);
		await page.getByLabel("Message").press("Enter");
		const log = page.getByRole("log", { name: "Transcript" });
		await log
			.getByText(/line 80$/)
			.last()
			.waitFor({ timeout: 15_000 });
		await until(async () => (await page.getByRole("button", { name: "Send" }).count()) === 1, 15_000);
		// Followed to the end while it streamed.
		const fromEnd = () =>
			page.evaluate(() => {
				const w = globalThis as unknown as Win & { document: { documentElement: { scrollHeight: number } } };
				return w.document.documentElement.scrollHeight - w.scrollY - w.innerHeight;
			});
		expect(await fromEnd()).toBeLessThan(100);
		// Scrolled to the top, the message box is still on screen.
		await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
		const box = await page.getByLabel("Message").boundingBox();
		expect(box && box.y >= 0 && box.y + box.height <= desktop.height).toBe(true);

		// A run streams while the reader is up there: not yanked down, offered a jump instead.
		await page.getByLabel("Message").fill("slow: 40");
		await page.getByLabel("Message").press("Enter");
		await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
		const jump = page.getByRole("button", { name: /Jump to latest/ });
		await jump.waitFor({ timeout: 10_000 });
		for (let i = 0; i < 5; i++) {
			await page.waitForTimeout(300);
			expect(await page.evaluate(() => (globalThis as unknown as Win).scrollY)).toBe(0);
		}
		await jump.click();
		await until(async () => (await fromEnd()) < 100, 5000);
		await jump.waitFor({ state: "detached" });
		await until(async () => (await page.getByRole("button", { name: "Send" }).count()) === 1, 15_000);
		await checkScreen(page, "session", "desktop");
		await checkScreen(page, "session", "phone");
	}, 120_000);

	it("reviews what changed: file list with counts, unified and split views, every changed line where the browser draws it", async () => {
		// One run writes notes.txt; the next (the one reviewed) deletes its second line and writes the rest.
		const first = await gw.api(`/v1/sessions/${newer}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: printf 'line one\\nline two\\nline three\\n' > notes.txt" },
		});
		expect(first.status).toBe(200);
		const command =
			"printf 'def add(a, b):\\n    return a + b  # sum\\n\\n\\ndef sub(a, b):\\n    return a - b\\n' > calc.py && printf 'line one\\nline three\\n' > notes.txt && printf 'bin\\0ary\\1' > blob.bin && seq 1 600 > big.txt";
		const ran = await gw.api(`/v1/sessions/${newer}/prompt?wait=true`, {
			method: "POST",
			json: { message: `bash: ${command}` },
		});
		expect(ran.status).toBe(200);
		await page.setViewportSize(desktop);
		const before = requested.filter((p) => p.endsWith("/console-review.js")).length;
		await page.goto(`${gw.url}/console/#/sessions/${newer}`);
		await page.getByRole("heading", { name: "newer", level: 1 }).waitFor();
		// The run has settled and been snapshotted when the page has it as a run.
		await page.getByRole("button", { name: "Changes" }).click();
		const picker = page.getByLabel("Changes of");
		// Both runs settled and snapshotted: the whole session, then the runs newest first.
		await until(async () => (await picker.locator("option").count()) >= 3, 30_000);
		const runs = await picker.locator("option").allInnerTexts();
		// Named by when and what was asked, never by an id.
		expect(
			runs.some((r) => /^\d\d?:\d\d( [AP]M)? · bash: printf/.test(r)),
			runs.join(" | "),
		).toBe(true);
		expect(runs.join(" ")).not.toMatch(/gw_/);
		// The second run: the one that wrote calc.py.
		const second = runs.find((r) => r.includes("def add"));
		expect(second, runs.join(" | ")).toBeTruthy();
		// By its place: its label gains the run's counts once they are read.
		await picker.selectOption({ index: runs.indexOf(second as string) });
		const files = page.getByRole("navigation", { name: "Changed files" });
		await files.waitFor({ timeout: 15_000 });
		// The review's code was fetched for this view, not before.
		expect(before).toBe(0);
		expect(requested.filter((p) => p.endsWith("/console-review.js")).length).toBe(1);
		const fileLinks = async () =>
			(await files.getByRole("link").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
		// The run's own list (the whole session's, shown first, is replaced once it is read).
		await until(async () => (await fileLinks()).some((t) => t.startsWith("M notes.txt")), 45_000);
		const listed = await fileLinks();
		// The four files the run wrote, and nothing of the gateway's own (no git objects).
		expect(listed).toHaveLength(4);
		expect(listed).toEqual(
			expect.arrayContaining([
				expect.stringMatching(/^A big\.txt \+600 −0/),
				expect.stringMatching(/^A blob\.bin binary/),
				expect.stringMatching(/^A calc\.py \+6 −0/),
				expect.stringMatching(/^M notes\.txt \+0 −1/),
			]),
		);
		await page.getByText("Binary file: not shown.").waitFor();
		const big = page.getByRole("region", { name: "Changes to big.txt" });
		await big.getByRole("button", { name: /Show diff \(601 lines\)/ }).waitFor();
		expect(await big.getByRole("cell").count()).toBe(0);

		const changed = ["+ return a + b # sum", "+ return a - b", "- line two"];
		for (const view of ["Unified", "Split"]) {
			await page.getByRole("button", { name: view, exact: true }).click();
			for (const name of changed) {
				const cell = page.getByRole("cell", { name, exact: true });
				await cell.waitFor();
				// What the browser draws at the line's own place is that line (nothing on top of it).
				const misses = await cell.evaluate((el) => {
					type Box = { left: number; top: number; width: number; height: number };
					type El = { getBoundingClientRect(): Box; contains(o: unknown): boolean; scrollIntoView(o: unknown): void };
					const d = (globalThis as unknown as { document: { elementFromPoint(x: number, y: number): unknown } })
						.document;
					const cellEl = el as unknown as El;
					cellEl.scrollIntoView({ block: "center" });
					const r = cellEl.getBoundingClientRect();
					const points = [0.1, 0.3, 0.5].map((fx) => [r.left + r.width * fx, r.top + r.height / 2]);
					return points.filter(([x, y]) => !cellEl.contains(d.elementFromPoint(x as number, y as number))).length;
				});
				expect(misses, `${view}: ${name}`).toBe(0);
			}
			// Line numbers on both sides: "line three" is line 3 before and 2 after.
			const row = page.getByRole("row").filter({ has: page.getByRole("cell", { name: "line three", exact: true }) });
			expect((await row.first().getByRole("cell").allInnerTexts()).map((t) => t.trim())).toEqual(
				view === "Unified" ? ["3", "2", "line three"] : ["3", "line three", "2", "line three"],
			);
			// Syntax colours: Python's `def` is drawn in another colour than the plain code around it.
			const def = page.getByRole("region", { name: "Changes to calc.py" }).getByText("def", { exact: true }).first();
			const plain = page.getByRole("cell", { name: "+ def add(a, b):", exact: true }).first();
			expect((await colours(def)).color).not.toBe((await colours(plain)).color);
			// Pictured from the top of the review: the summary and the file list first.
			const top = () =>
				page
					.getByText(/^4 files changed/)
					.evaluate((el) =>
						(el as unknown as { scrollIntoView(o: unknown): void }).scrollIntoView({ block: "center" }),
					);
			await checkScreen(page, `changes-${view.toLowerCase()}`, "desktop", top);
			await checkScreen(page, `changes-${view.toLowerCase()}`, "phone", top);
		}
		await big.getByRole("button", { name: /Show diff/ }).click();
		await big.getByRole("cell", { name: "+ 600", exact: true }).waitFor();
	}, 120_000);

	it("styles approvals by meaning, names the session, shows the command in monospace and focuses neither answer", async () => {
		const gated = await gw.session({ name: "gated", extensions: ["permission-gate"] });
		await page.goto(`${gw.url}/console/#/sessions/${gated}`);
		await page.getByRole("heading", { name: "gated", level: 1 }).waitFor();
		await until(async () => (await page.getByRole("status").allInnerTexts()).includes("Live"), 15_000);
		expect(
			(await gw.api(`/v1/sessions/${gated}/prompt`, { method: "POST", json: { message: "bash: rm -rf ./z" } })).status,
		).toBe(202);
		const here = page.getByRole("region", { name: "Waiting for an answer" });
		await here.getByRole("button", { name: "Allow" }).waitFor({ timeout: 15_000 });
		// The sidebar says so too.
		await sidebar(page)
			.getByRole("link", { name: /^gated.*1 pending/ })
			.waitFor({ timeout: 10_000 });
		await checkScreen(page, "session-approval", "desktop");
		await checkScreen(page, "session-approval", "phone");

		await page
			.getByRole("navigation", { name: "Console" })
			.getByRole("link", { name: /Approvals/ })
			.click();
		const card = page.getByRole("region", { name: /Allow this bash command\?.*rm -rf \.\/z/ });
		await card.waitFor();
		const allow = card.getByRole("button", { name: "Allow" });
		const block = card.getByRole("button", { name: "Block" });
		const [a, b] = [await colours(allow), await colours(block)];
		expect(a.background).not.toBe(b.background);
		expect(b.background).not.toBe("rgba(0, 0, 0, 0)");
		// Neither answer holds the focus: a stray Enter answers nothing.
		const focusedAnswer = await card.evaluate((el) =>
			(el as unknown as { contains(o: unknown): boolean }).contains(
				(globalThis as unknown as Win).document.activeElement,
			),
		);
		expect(focusedAnswer).toBe(false);
		const session = card.getByText("gated", { exact: true });
		expect(await fontOf(session)).toMatch(/mono/i);
		const cmd = card.getByText("rm -rf ./z", { exact: true });
		expect(await fontOf(cmd)).toMatch(/mono/i);
		await checkScreen(page, "approvals", "desktop");
		await checkScreen(page, "approvals", "phone");
		await block.click();
		await card.getByText("Answered: Block by admin").waitFor();
	}, 120_000);

	it("creates a session with a model picked from the gateway's and a folder made in the caller's own area", async () => {
		mkdirSync(join(gw.workspace, "proj"));
		expect((await gw.api("/v1/sessions", { method: "POST", json: { name: "in proj", cwd: "proj" } })).status).toBe(201);
		await page.goto(`${gw.url}/console/#/new`);
		await page.getByRole("heading", { name: "New session" }).waitFor();
		// A list of the gateway's models (asked of a live session), not a free-text field.
		const model = page.getByRole("combobox", { name: "Model" });
		await model.waitFor({ timeout: 30_000 });
		const models = await model.locator("option").allInnerTexts();
		expect(models.length).toBeGreaterThan(1);
		await model.selectOption({ index: 1 });
		const chosenModel = await model.inputValue();
		await page.getByLabel("Name").fill("in a folder");
		await page.getByLabel("A folder in my area").check();
		// Browsed through a session working in a real folder of the area (a session's own folder is not offered).
		await page.getByLabel("Look in").waitFor({ timeout: 10_000 });
		await page.getByLabel("Look in").selectOption({ label: "proj" });
		await page.getByLabel("New folder name").fill("proj-x");
		await page.getByRole("button", { name: "Create folder" }).click();
		await page.getByText(/Chosen: .*proj-x/).waitFor({ timeout: 20_000 });
		await checkScreen(page, "new-session", "desktop");
		await checkScreen(page, "new-session", "phone");
		await page.getByRole("button", { name: "Create session" }).click();
		await page.getByRole("heading", { name: "in a folder", level: 1 }).waitFor({ timeout: 20_000 });
		const id = decodeURIComponent(new URL(page.url()).hash.replace("#/sessions/", ""));
		const created = (await gw.api(`/v1/sessions/${id}`)).body;
		expect(created.cwd).toMatch(/\/proj-x$/);
		expect(`${created.model.provider}/${created.model.id}`).toBe(chosenModel);
	}, 240_000);
	// Last: a fake clock, once installed, is the whole browser context's.
	it("counts down to an approval's expiry and then says it expired, with no answer left to press", async () => {
		const clocked = await browser.newPage();
		const t0 = new Date("2026-03-02T10:00:00Z").getTime();
		await clocked.clock.install({ time: t0 });
		const approval = {
			id: "ap_countdown",
			sessionId: older,
			method: "select",
			title: "Allow this bash command?\n\n  rm -rf ./later",
			message: null,
			options: ["Allow", "Block"],
			placeholder: null,
			prefill: null,
			createdAt: new Date(t0).toISOString(),
			expiresAt: new Date(t0 + 90_000).toISOString(),
			status: "pending",
			answer: null,
			resolvedAt: null,
			resolvedBy: null,
		};
		await clocked.route(/\/v1\/approvals\?status=pending/, (route) =>
			route.fulfill({ json: { approvals: [approval], nextCursor: "0", hasMore: false } }),
		);
		await signIn(clocked);
		await clocked.goto(`${gw.url}/console/#/approvals`);
		const card = clocked.getByRole("region", { name: /rm -rf \.\/later/ });
		// The fake clock runs on from t0 as the page loads: a second or two may be gone already.
		await card.getByText(/^Expires in 1 min (2\d|30) s$/).waitFor({ timeout: 20_000 });
		await clocked.clock.pauseAt(t0 + 40_000);
		await card.getByText("Expires in 50 s").waitFor();
		await clocked.clock.runFor(49_000);
		await card.getByText("Expires in 1 s").waitFor();
		await clocked.clock.runFor(2000);
		await card.getByText("Expired").first().waitFor();
		expect(await card.getByRole("button", { name: /Allow|Block/ }).count()).toBe(0);
		// The clock is the browser context's, not this page's: time runs on for the rest again.
		await clocked.clock.resume();
		await clocked.close();
	});

	it("says which files a run's snapshot could not read, not only 'No files changed.'", async () => {
		const created = await gw.api("/v1/sessions", { method: "POST", json: { name: "hidden" } });
		const id = created.body.id as string;
		const prompt = (command: string) =>
			gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: `bash: ${command}` } });
		expect((await prompt("echo one > secret.txt")).status).toBe(200);
		// A FIFO in a tracked file's place: git cannot take it as a file (a mode hides nothing now).
		expect((await prompt("rm secret.txt && mkfifo secret.txt")).status).toBe(200);
		// A page of its own, signed in: this test does not lean on the others having run.
		const page = await browser.newPage();
		await signIn(page);
		await page.goto(`${gw.url}/console/#/sessions/${id}`);
		await page.getByRole("heading", { name: "hidden", level: 1 }).waitFor();
		await page.getByRole("button", { name: "Changes" }).click();
		const picker = page.getByLabel("Changes of");
		await until(async () => (await picker.locator("option").count()) >= 3, 30_000);
		const run = (await picker.locator("option").allInnerTexts()).findIndex((r) => r.includes("mkfifo"));
		expect(run).toBeGreaterThan(0);
		// By its place: its label gains the run's counts once they are read.
		await picker.selectOption({ index: run });
		const alert = page.getByRole("alert").filter({ hasText: "Not read" });
		await alert.waitFor({ timeout: 15_000 });
		expect(await alert.textContent()).toContain("secret.txt");
		await page.getByText("No files changed.").waitFor();
		await page.close();
	}, 90_000);
});
