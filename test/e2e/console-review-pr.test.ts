import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { launchChromium } from "../helpers/chromium.ts";
import { buildConsole } from "../helpers/console-build.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// The changes review on a par with a pull request, and the new-session form (issue 46 items 4 and
// 5), in Debian's Chromium with real pi and the demo model, at desktop and phone size: the review
// opens on the latest run that changed files (not a later one that changed none), each run named
// by time, prompt and counts; a moved file is one renamed entry; the changed characters of a line
// are marked; the lines between hunks open; the file list jumps to each file; "Viewed" is kept per
// person across a reload; an approval links into the review; the Files view numbers and colours
// code and marks what changed; a new session takes a first prompt and a real folder of the area,
// with no session id offered; the model picker shows its model's whole name. axe on each screen.
// PI_GW_CONSOLE_DIR (a built console elsewhere, e.g. an older commit's) is served to the browser
// in place of dist/console: how this file was seen failing on the old console.
const token = "console-review-pr-token-0123456789";
const artifacts = resolve(import.meta.dirname, "../../test-artifacts/console");
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };
let gw: TestGateway;
let chrome: Awaited<ReturnType<typeof launchChromium>> | undefined;
let browser: BrowserContext;
let page: Page;
let keysDir: string;
let alice: string;
let sessionId: string;

beforeAll(async () => {
	buildConsole();
	mkdirSync(artifacts, { recursive: true });
	keysDir = mkdtempSync(join(tmpdir(), "pi-gateway-review-keys-"));
	const keysFile = join(keysDir, "keys.json");
	alice = createKey(keysFile, "alice", ["admin"]).secret;
	gw = await startTestGateway({ token, keysFile });
	chrome = await launchChromium(desktop);
	browser = chrome.browser;
	const elsewhere = process.env.PI_GW_CONSOLE_DIR;
	if (elsewhere)
		await browser.route(/\/console\/([\w.-]*)(\?.*)?$/, (route) => {
			const name = /\/console\/([\w.-]*)/.exec(route.request().url())?.[1] || "index.html";
			const type = name.endsWith(".js") ? "text/javascript" : name.endsWith(".css") ? "text/css" : "text/html";
			return route.fulfill({ body: readFileSync(join(elsewhere, name)), contentType: type });
		});
	page = await browser.newPage();
}, 120_000);

afterAll(async () => {
	await chrome?.close();
	await gw?.stop();
	rmSync(keysDir, { recursive: true, force: true });
});

type Win = { document: { documentElement: { scrollWidth: number; clientWidth: number } } };

/** axe (no violation at all), nothing sideways, and a screenshot, in light and dark. */
async function checkScreen(p: Page, name: string, size: "desktop" | "phone", ready?: () => Promise<unknown>) {
	await p.setViewportSize(size === "desktop" ? desktop : phone);
	for (const scheme of ["light", "dark"] as const) {
		await p.emulateMedia({ colorScheme: scheme });
		await ready?.();
		await p.waitForTimeout(150);
		const result = await new AxeBuilder({ page: p }).analyze();
		expect(
			result.violations.map((v) => `${v.id} ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
			`${name} ${size} ${scheme}`,
		).toEqual([]);
		const sideways = await p.evaluate(() => {
			const root = (globalThis as unknown as Win).document.documentElement;
			return root.scrollWidth - root.clientWidth;
		});
		expect(sideways, `${name} ${size} ${scheme} scrolls sideways`).toBeLessThanOrEqual(0);
		await p.screenshot({ path: join(artifacts, `${name}-${size}-${scheme}.png`) });
	}
	await p.emulateMedia({ colorScheme: "light" });
	await p.setViewportSize(desktop);
}

async function signIn(p: Page, credential = token) {
	await p.goto(`${gw.url}/console/`);
	await p.getByLabel("Token or API key").fill(credential);
	await p.getByRole("button", { name: "Sign in" }).click();
	await p.getByRole("button", { name: "Sign out" }).waitFor();
}

const bash = async (id: string, command: string) => {
	const ran = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		json: { message: `bash: ${command}` },
	});
	expect(ran.status, JSON.stringify(ran.body)).toBe(200);
};

/** 30 numbered lines of Python: two changes far apart make two hunks with lines hidden between. */
const calc = Array.from({ length: 30 }, (_, i) => (i === 0 ? "def add(a, b):" : `    # line ${i + 1}`));
calc[1] = "    return a + b  # sum";
const printf = (lines: string[]) => `printf '${lines.join("\\n")}\\n'`;

async function openChanges(p: Page) {
	await p.goto(`${gw.url}/console/#/sessions/${sessionId}`);
	await p.getByRole("heading", { name: "review-pr", level: 1 }).waitFor();
	await p.getByRole("button", { name: "Changes", exact: true }).click();
	// The runs come with the session's stream: the review moves to the latest that changed files.
	await until(
		async () => /files? \+\d+ −\d+$/.test((await picker(p).locator("option:checked").textContent()) ?? ""),
		30_000,
	);
}

const picker = (p: Page) => p.getByLabel("Changes of");
const fileLinks = async (p: Page) =>
	(await p.getByRole("navigation", { name: "Changed files" }).getByRole("link").allInnerTexts()).map((t) =>
		t.replace(/\s+/g, " ").trim(),
	);

describe("the changes review, on a par with a pull request", () => {
	it("opens on the latest run that changed files, each run named by time, prompt and counts", async () => {
		sessionId = await gw.session({ name: "review-pr" });
		await bash(
			sessionId,
			`mkdir -p old && ${printf(calc)} > calc.py && ${printf(["alpha", "beta", "gamma", "delta"])} > old/name.txt && echo gone > gone.txt`,
		);
		const edited = calc.map((l, i) =>
			i === 1 ? "    return a * b  # product" : i === 27 ? "    # line 28, edited" : l,
		);
		await bash(sessionId, `${printf(edited)} > calc.py && mkdir -p new && mv old/name.txt new/name.txt && rm gone.txt`);
		// The last run changes nothing.
		const last = await gw.api(`/v1/sessions/${sessionId}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: nothing to change" },
		});
		expect(last.status).toBe(200);
		await signIn(page);
		await openChanges(page);
		await until(async () => (await picker(page).locator("option").count()) === 4, 30_000);
		// Counts fill in as each run's changes are read.
		await until(
			async () => /\+\d+ −\d+$/.test((await picker(page).locator("option:checked").textContent()) ?? ""),
			20_000,
		);
		const labels = await picker(page).locator("option").allInnerTexts();
		const chosen = (await picker(page).locator("option:checked").textContent()) ?? "";
		// A moved file counts once, as the review shows it.
		expect(chosen, labels.join(" | ")).toMatch(/^\d\d?:\d\d( [AP]M)? · bash: printf .* · 3 files \+2 −3$/);
		expect(labels[1], labels.join(" | ")).toMatch(/ · echo: nothing to change · no files changed$/);
		expect(labels.join(" ")).not.toMatch(/gw_/);
		await page.getByRole("navigation", { name: "Changed files" }).waitFor({ timeout: 15_000 });
		expect(await page.getByText("No files changed.").count()).toBe(0);
	}, 180_000);

	it("shows a moved file as one renamed entry, not a deletion and an addition", async () => {
		await until(async () => (await fileLinks(page)).length === 3, 15_000);
		const links = await fileLinks(page);
		expect(links).toEqual(
			expect.arrayContaining([
				expect.stringMatching(/^M calc\.py \+2 −2/),
				expect.stringMatching(/^D gone\.txt \+0 −1/),
				expect.stringMatching(/^R old\/name\.txt → new\/name\.txt \+0 −0/),
			]),
		);
		const moved = page.getByRole("region", { name: "Changes to new/name.txt" });
		await moved.getByText("Moved without changes.").waitFor();
	});

	it("marks the changed characters inside a changed line, in both views", async () => {
		const file = page.getByRole("region", { name: "Changes to calc.py" });
		for (const size of [phone, desktop])
			for (const view of ["Unified", "Split"]) {
				await page.setViewportSize(size);
				await page.getByRole("button", { name: view, exact: true }).click();
				const marked = await file.locator("mark.chg").allInnerTexts();
				expect(marked, `${view} at ${size.width}px`).toEqual(expect.arrayContaining(["+", "*", "sum", "product"]));
				// Only the words that changed: the rest of the line is not marked.
				expect(marked.join("")).not.toContain("return");
			}
		await checkScreen(page, "review-pr", "desktop", () =>
			page
				.getByText(/^3 files changed/)
				.evaluate((el) => (el as unknown as { scrollIntoView(o: unknown): void }).scrollIntoView({ block: "center" })),
		);
	}, 60_000);

	it("opens the lines between hunks", async () => {
		await page.getByRole("button", { name: "Unified", exact: true }).click();
		const file = page.getByRole("region", { name: "Changes to calc.py" });
		const cell = (text: string) => file.getByRole("cell", { name: text, exact: true });
		expect(await cell("# line 15").count()).toBe(0);
		// Lines 6 to 24 lie between the two hunks (three lines of context each side).
		await file.getByRole("button", { name: "Show 19 hidden lines" }).click();
		await cell("# line 15").waitFor();
		const row = file.getByRole("row").filter({ has: page.getByRole("cell", { name: "# line 15", exact: true }) });
		expect((await row.getByRole("cell").allInnerTexts()).map((t) => t.trim())).toEqual(["15", "15", "# line 15"]);
		// The last hunk ends the file: nothing is hidden below it.
		expect(await file.getByRole("button", { name: /Show the rest|hidden line/ }).count()).toBe(0);
		await checkScreen(page, "review-pr-expanded", "phone", () =>
			cell("# line 15").evaluate((el) =>
				(el as unknown as { scrollIntoView(o: unknown): void }).scrollIntoView({ block: "center" }),
			),
		);
	}, 60_000);

	it("jumps from the file list to each file, its header not under the page's own", async () => {
		for (const size of [desktop, phone]) {
			await page.setViewportSize(size);
			for (const [name, region] of [
				["new/name.txt", "Changes to new/name.txt"],
				["gone.txt", "Changes to gone.txt"],
				["calc.py", "Changes to calc.py"],
			] as const) {
				await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
				await page
					.getByRole("navigation", { name: "Changed files" })
					.getByRole("link", { name: new RegExp(name.replace(".", "\\.")) })
					.click();
				const section = page.getByRole("region", { name: region });
				// Its header on screen (at the top, unless the page ends first).
				await until(async () => {
					const box = await section.locator("header").boundingBox();
					return box !== null && box.y >= 0 && box.y + box.height <= size.height;
				}, 5000);
				// What is drawn at the file's header is the header itself (not the page's sticky bar).
				const covered = await section.locator("header").evaluate((el) => {
					const r = (
						el as unknown as { getBoundingClientRect(): { left: number; top: number; width: number; height: number } }
					).getBoundingClientRect();
					const d = (globalThis as unknown as { document: { elementFromPoint(x: number, y: number): unknown } })
						.document;
					return !(el as unknown as { contains(o: unknown): boolean }).contains(
						d.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2),
					);
				});
				expect(covered, `${name} at ${size.width}px`).toBe(false);
				expect(
					await section.evaluate(
						(el) => el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement,
					),
				).toBe(true);
			}
		}
		await page.setViewportSize(desktop);
	}, 60_000);

	it("keeps each file's Viewed check per person, across a reload", async () => {
		const file = page.getByRole("region", { name: "Changes to calc.py" });
		await file.getByRole("checkbox", { name: "Viewed calc.py" }).check();
		// Viewed: folded, and ticked in the list.
		await until(async () => (await file.getByRole("table").count()) === 0, 5000);
		await page.getByText("1 of 3 viewed").waitFor();
		expect((await fileLinks(page)).find((l) => l.includes("calc.py"))).toMatch(/✓ viewed$/);
		await checkScreen(page, "review-pr-viewed", "phone");
		// A session left idle hibernates and the page then has no stream to learn its runs from (the
		// review opens on the whole session): woken by a run that changes nothing, the default stays.
		const wake = async () =>
			expect(
				(
					await gw.api(`/v1/sessions/${sessionId}/prompt?wait=true`, {
						method: "POST",
						json: { message: "echo: awake" },
					})
				).status,
			).toBe(200);
		await wake();
		await page.reload();
		await openChanges(page);
		const again = page.getByRole("region", { name: "Changes to calc.py" });
		await again.getByRole("checkbox", { name: "Viewed calc.py" }).waitFor({ timeout: 20_000 });
		await until(async () => await again.getByRole("checkbox", { name: "Viewed calc.py" }).isChecked(), 5000);
		// The whole session's change of calc.py (another change: its own mark), viewed too.
		await picker(page).selectOption({ index: 0 });
		const whole = page.getByRole("region", { name: "Changes to calc.py" });
		await until(
			async () => (await page.locator(".summary").textContent())?.startsWith("2 files changed") ?? false,
			15_000,
		);
		expect(await whole.getByRole("checkbox", { name: "Viewed calc.py" }).isChecked()).toBe(false);
		await whole.getByRole("checkbox", { name: "Viewed calc.py" }).check();
		await page.getByText("1 of 2 viewed").waitFor();
		// Another person in the same browser has viewed none of it.
		await page.getByRole("button", { name: "Sign out" }).click();
		await signIn(page, alice);
		await page.goto(`${gw.url}/console/#/sessions/${sessionId}`);
		await page.getByRole("button", { name: "Changes", exact: true }).click();
		await picker(page).selectOption({ index: 0 });
		const hers = page.getByRole("region", { name: "Changes to calc.py" });
		await until(
			async () => (await page.locator(".summary").textContent())?.startsWith("2 files changed") ?? false,
			15_000,
		);
		expect(await hers.getByRole("checkbox", { name: "Viewed calc.py" }).isChecked()).toBe(false);
		expect(await page.locator(".summary").textContent()).toContain("0 of 2 viewed");
		await page.getByRole("button", { name: "Sign out" }).click();
		await signIn(page);
	}, 90_000);

	it("numbers and colours a file in the Files view and marks what the session changed", async () => {
		await page.goto(`${gw.url}/console/#/sessions/${sessionId}`);
		await page.getByRole("button", { name: "Files", exact: true }).click();
		const open = page.getByRole("button", { name: "calc.py (added)" });
		await open.waitFor({ timeout: 15_000 });
		await page.getByRole("button", { name: "new/" }).waitFor();
		await open.click();
		const code = page.getByRole("table", { name: "Contents of calc.py" });
		await code.waitFor({ timeout: 15_000 });
		const first = code
			.getByRole("row")
			.filter({ has: page.getByRole("cell", { name: "def add(a, b):", exact: true }) });
		expect((await first.getByRole("cell").allInnerTexts()).map((t) => t.trim())).toEqual(["1", "def add(a, b):"]);
		expect(await code.locator(".hljs-keyword").first().textContent()).toBe("def");
		await checkScreen(page, "files-code", "desktop");
		await checkScreen(page, "files-code", "phone");
	}, 60_000);

	it("links an approval's 'What the agent changed' into the review", async () => {
		const gated = await gw.session({ name: "gated-review", extensions: ["permission-gate"] });
		await bash(gated, "echo one > kept.txt");
		expect(
			(await gw.api(`/v1/sessions/${gated}/prompt`, { method: "POST", json: { message: "bash: rm -rf ./z" } })).status,
		).toBe(202);
		await page.goto(`${gw.url}/console/#/approvals`);
		const card = page.getByRole("region", { name: /rm -rf \.\/z/ });
		await card.waitFor({ timeout: 20_000 });
		// Beside the dialog: what the agent changed so far, and the way into the review.
		await page.getByText("What the agent changed").first().click();
		await page.getByRole("link", { name: "Open in the review" }).first().click();
		await page.getByRole("heading", { name: "gated-review", level: 1 }).waitFor();
		expect(await picker(page).locator("option:checked").textContent()).toBe("the whole session");
		await until(async () => (await fileLinks(page)).some((l) => l.startsWith("A kept.txt")), 15_000);
		await gw.api(`/v1/sessions/${gated}/abort`, { method: "POST" });
	}, 90_000);
});

describe("a new session", () => {
	it("takes a first prompt and a real folder of the caller's area, never offering a session's own folder", async () => {
		// A real folder of the area (the admin's: the root), and sessions working there and in the area itself.
		mkdirSync(join(gw.workspace, "proj-x", "api"), { recursive: true });
		await gw.session({ name: "in proj-x", cwd: "proj-x" });
		await gw.session({ name: "in the area", cwd: "." });
		await page.goto(`${gw.url}/console/#/new`);
		await page.getByRole("heading", { name: "New session" }).waitFor();
		await page.getByLabel("Name").fill("with a first prompt");
		await page.getByLabel("First prompt").fill("echo: first words");
		await page.getByLabel("A folder in my area").check();
		const lookIn = page.getByLabel("Look in");
		await lookIn.waitFor({ timeout: 10_000 });
		// Once the page's list of sessions has the two just made (it polls every 3 s).
		await until(async () => (await lookIn.locator("option").allInnerTexts()).join() === "my area,proj-x", 15_000);
		await lookIn.selectOption({ label: "my area" });
		// The area itself: its real folders, none of the sessions' own (ses_…).
		const folders = page.getByRole("list", { name: "Folders" });
		await folders.getByRole("button", { name: "proj-x/" }).waitFor({ timeout: 10_000 });
		expect((await folders.textContent())?.match(/ses_/g)).toBeFalsy();
		await lookIn.selectOption({ label: "proj-x" });
		await folders.getByRole("button", { name: "api/" }).waitFor({ timeout: 10_000 });
		await page.getByLabel("New folder name").fill("web");
		await page.getByRole("button", { name: "Create folder" }).click();
		await page.getByText(/Chosen: proj-x\/web/).waitFor({ timeout: 20_000 });
		expect(await page.getByRole("main").textContent()).not.toMatch(/ses_/);
		await checkScreen(page, "new-session-pr", "desktop");
		await checkScreen(page, "new-session-pr", "phone");
		await page.getByRole("button", { name: "Create session" }).click();
		await page.getByRole("heading", { name: "with a first prompt", level: 1 }).waitFor({ timeout: 20_000 });
		const log = page.getByRole("log", { name: "Transcript" });
		await log.getByText("first words").last().waitFor({ timeout: 20_000 });
		const id = decodeURIComponent(new URL(page.url()).hash.replace("#/sessions/", ""));
		const created = (await gw.api(`/v1/sessions/${id}`)).body;
		expect(created.cwd).toBe(join(gw.workspace, "proj-x", "web"));
	}, 120_000);

	it("shows the model's whole name in the composer's picker", async () => {
		// A page and a session of its own: this test does not lean on the others having run.
		const own = await gw.session({ name: "model picker" });
		const page = await browser.newPage();
		await signIn(page);
		await page.goto(`${gw.url}/console/#/sessions/${own}`);
		await page.getByRole("heading", { name: "model picker", level: 1 }).waitFor({ timeout: 20_000 });
		// On a desktop (on a phone the composer keeps to two lines: the name gets what is left).
		for (const size of [desktop]) {
			await page.setViewportSize(size);
			const select = page.getByRole("combobox", { name: "Model" });
			await until(
				async () => (await select.locator("option").count()) > 0 && (await select.inputValue()) !== "",
				15_000,
			);
			const cut = await select.evaluate((el) => {
				type Sel = { options: { text: string }[]; selectedIndex: number; clientWidth: number };
				const d = globalThis as unknown as {
					document: { createElement(t: string): any; body: any };
					getComputedStyle(e: unknown): { font: string };
				};
				const s = el as unknown as Sel;
				const probe = d.document.createElement("span");
				probe.textContent = s.options[s.selectedIndex]?.text ?? "";
				probe.style.font = d.getComputedStyle(el).font;
				probe.style.position = "absolute";
				probe.style.whiteSpace = "pre";
				d.document.body.append(probe);
				const width = probe.getBoundingClientRect().width;
				probe.remove();
				// The arrow and padding take about 1.5rem of the box.
				return { text: probe.textContent, width, room: s.clientWidth - 20 };
			});
			expect(cut.width, `${cut.text} at ${size.width}px`).toBeLessThanOrEqual(cut.room);
		}
		await checkScreen(page, "composer-model", "phone");
		await page.close();
	}, 60_000);
});
