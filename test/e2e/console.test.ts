import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { launchChromium } from "../helpers/chromium.ts";
import { buildConsole } from "../helpers/console-build.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";

// The console in Debian's Chromium over the whole flow, with real pi and the demo model: sign in,
// create a session with the permission gate, watch text stream, answer the gate's dialog by its
// "Allow" button, cut the connection mid-run and see the transcript resume whole, a phone's
// viewport, axe in light and dark, the CSP. The browser talks to the gateway through a TCP proxy
// (the page's origin), which is what the test cuts. Elements are found by role and name only.
const token = "console-e2e-token-0123456789";
const artifacts = resolve(import.meta.dirname, "../../test-artifacts/console");
let gw: TestGateway;
let proxy: TcpProxy;
let browser: BrowserContext;
let chrome: Awaited<ReturnType<typeof launchChromium>> | undefined;
let keysDir: string;
let approverKey: string;
let origin: string;
const cspViolations: string[] = [];

beforeAll(async () => {
	// The console as the package ships it (dist/console), built from this tree.
	buildConsole();
	mkdirSync(artifacts, { recursive: true });
	keysDir = mkdtempSync(join(tmpdir(), "pi-gateway-console-keys-"));
	const keysFile = join(keysDir, "keys.json");
	approverKey = createKey(keysFile, "approver", ["approvals:read", "approvals:answer"]).secret;
	// One live pi at a time: a second session hibernates the first, which the console then resumes.
	gw = await startTestGateway({ token, keysFile, maxLiveSessions: 1 });
	proxy = await startProxy(Number(new URL(gw.url).port));
	origin = `http://127.0.0.1:${proxy.port}`;
	chrome = await launchChromium({ width: 1100, height: 900 });
	browser = chrome.browser;
}, 90_000);

afterAll(async () => {
	await chrome?.close();
	await proxy?.close();
	await gw?.stop();
	if (keysDir) rmSync(keysDir, { recursive: true, force: true });
});

async function openConsole(): Promise<Page> {
	const page = await browser.newPage();
	page.on("console", (m) => {
		if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text());
	});
	return page;
}

async function signIn(page: Page, credential: string) {
	await page.goto(`${origin}/console`);
	await page.getByLabel("Token or API key").fill(credential);
	await page.getByRole("button", { name: "Sign in" }).click();
	await page.getByRole("button", { name: "Sign out" }).waitFor();
}

/** The transcript's text per entry, as a person reads it. */
const entries = (page: Page) =>
	page
		.getByRole("log", { name: "Transcript" })
		.locator(":scope > div, :scope > details")
		// innerText: the text as rendered, line breaks included.
		// biome-ignore lint/performance/useDomNodeTextContent: what a person reads
		.evaluateAll((nodes) => nodes.map((n) => (n as unknown as { innerText: string }).innerText.trim()));
const lastAgentText = async (page: Page) =>
	(await entries(page))
		.filter((t) => t.startsWith("Agent"))
		.at(-1)
		?.replace(/^Agent\s*/, "");

async function noSeriousViolations(page: Page, where: string) {
	const result = await new AxeBuilder({ page }).analyze();
	const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
	expect(
		serious.map((v) => `${where}: ${v.id} ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
		where,
	).toEqual([]);
}

/** Presses Tab (or Shift+Tab) until the focused element is the one with this role and name. */
async function tabTo(page: Page, role: string, name: string, backwards = false) {
	for (let i = 0; i < 40; i++) {
		await page.keyboard.press(backwards ? "Shift+Tab" : "Tab");
		const focused = await page.evaluate(() => {
			const el = (globalThis as unknown as { document: { activeElement: any } }).document.activeElement;
			const type = el?.getAttribute?.("type");
			return {
				role: el?.tagName === "BUTTON" ? "button" : type === "checkbox" ? "checkbox" : String(el?.tagName),
				name: String(el?.labels?.[0]?.textContent ?? el?.textContent ?? "").trim(),
			};
		});
		if (focused.role === role && focused.name === name) return;
	}
	throw new Error(`Tab never reached the ${role} "${name}"`);
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

describe("the console", () => {
	let page: Page;
	let sessionId: string;

	it("is served on the gateway itself with a strict CSP, and signs in with the token typed into its field", async () => {
		const res = await fetch(`${origin}/console/`);
		expect(res.status).toBe(200);
		const csp = res.headers.get("content-security-policy") ?? "";
		for (const directive of [
			"default-src 'self'",
			"script-src 'self'",
			"style-src 'self'",
			"connect-src 'self'",
			"frame-ancestors 'none'",
			"object-src 'none'",
		])
			expect(csp).toContain(directive);
		expect(csp).not.toContain("unsafe-inline");
		expect(res.headers.get("x-content-type-options")).toBe("nosniff");
		expect(await res.text()).not.toMatch(/<script>|<style>| style=/);

		page = await openConsole();
		await page.goto(`${origin}/console`);
		await page.getByLabel("Token or API key").waitFor();
		expect(await page.getByLabel("Token or API key").getAttribute("type")).toBe("password");
		await noSeriousViolations(page, "sign-in");
		await shot(page, "sign-in");
		await signIn(page, token);
		await page.getByRole("heading", { name: "Sessions" }).waitFor();
		// Kept for the tab only, never in a URL.
		expect(page.url()).not.toContain(token);
		expect(await page.evaluate(() => localStorage.length)).toBe(0);
	});

	it("creates a session with the permission gate and streams a prompt's text as it comes", async () => {
		await page.getByRole("link", { name: "New session" }).first().click();
		await page.getByRole("heading", { name: "New session" }).waitFor();
		await page.getByLabel("Name").fill("console-e2e");
		await page.getByLabel("permission-gate").check();
		await page.getByRole("button", { name: "Create session" }).click();
		await page.getByRole("heading", { name: "console-e2e" }).waitFor();
		sessionId = decodeURIComponent(new URL(page.url()).hash.replace("#/sessions/", ""));
		expect(gw.registry.get(sessionId).name).toBe("console-e2e");
		await until(async () => (await page.getByRole("status").allInnerTexts()).includes("Live"), 15_000);

		await page.getByLabel("Message").fill("slow: 10");
		await page.getByLabel("Message").press("Enter");
		const seen = new Set<string>();
		await until(async () => {
			const text = await lastAgentText(page);
			if (text) seen.add(text);
			return text === "1 2 3 4 5 6 7 8 9 10";
		}, 20_000);
		// Some frames showed part of the answer: it streamed.
		expect([...seen].some((t) => /^1( \d)+$/.test(t) && t !== "1 2 3 4 5 6 7 8 9 10")).toBe(true);
		await until(async () => (await page.getByRole("button", { name: "Send" }).count()) === 1, 10_000);
		await shot(page, "session");
	});

	it("shows the gate's dialog in the inbox and next to the session, and answers it by its Allow button", async () => {
		await page.getByLabel("Message").fill("bash: rm -rf ./x");
		await page.getByLabel("Message").press("Enter");
		await page.getByRole("link", { name: /Approvals 1 pending/ }).waitFor({ timeout: 15_000 });
		// Next to the session's transcript too, with what the agent changed so far.
		await page.getByRole("region", { name: "Waiting for an answer" }).getByRole("button", { name: "Allow" }).waitFor();
		await page.getByText("What the agent changed").first().click();
		await page.getByText("No files changed.").waitFor();
		await shot(page, "session-approval");
		await page.getByRole("link", { name: /Approvals/ }).click();
		await page.getByRole("heading", { name: "Approvals" }).waitFor();
		const dialog = page.getByRole("region", { name: /Allow this bash command/ });
		await dialog.waitFor();
		expect(await dialog.getByRole("button").allInnerTexts()).toEqual(["Allow", "Block", "Dismiss"]);
		expect(await dialog.getByLabel("Remember for this session").isChecked()).toBe(false);
		await noSeriousViolations(page, "inbox");
		await shot(page, "approval");
		await dialog.getByRole("button", { name: "Allow" }).click();
		await dialog.getByText("Answered: Allow by admin").waitFor();
		const answered = gw.registry
			.get(sessionId)
			.approvals.list()
			.find((a) => a.title.includes("rm -rf ./x"));
		expect(answered?.answer).toEqual({ value: "Allow" });

		await page.getByRole("link", { name: "Open session console-e2e" }).first().click();
		await until(async () => (await lastAgentText(page))?.startsWith("The command finished."), 20_000);
		expect((await entries(page)).some((t) => t.startsWith("$ rm -rf ./x"))).toBe(true);
	});

	it("resumes the transcript whole after the connection is cut mid-run: nothing lost, nothing twice", async () => {
		const before = proxy.requests.filter((r) => r.startsWith(`GET /v1/sessions/${sessionId}/events?`)).length;
		await page.getByLabel("Message").fill("slow: 30");
		await page.getByLabel("Message").press("Enter");
		await until(async () => /^1 2 3/.test((await lastAgentText(page)) ?? ""), 10_000);
		proxy.cut();
		await until(async () => (await page.getByRole("status").allInnerTexts()).includes("Live"), 20_000);
		const full = Array.from({ length: 30 }, (_, i) => i + 1).join(" ");
		await until(async () => (await lastAgentText(page)) === full, 30_000);
		const reconnects = proxy.requests.filter((r) => r.startsWith(`GET /v1/sessions/${sessionId}/events?`));
		expect(reconnects.length).toBeGreaterThan(before);
		expect(reconnects.at(-1)).toMatch(/\r\nlast-event-id: \d+\r\n|[?&]after=[1-9]/i);

		// The page's conversation is pi's, entry for entry.
		await until(async () => (await page.getByRole("button", { name: "Send" }).count()) === 1, 10_000);
		const messages = (await gw.api(`/v1/sessions/${sessionId}/messages`)).body.messages as {
			role: string;
			content: { type: string; text?: string }[];
		}[];
		const said = messages
			.filter((m) => m.role === "user" || (m.role === "assistant" && m.content.some((c) => c.type === "text")))
			.map((m) => `${m.role === "user" ? "You" : "Agent"}\n${m.content.map((c) => c.text ?? "").join("")}`.trim());
		const shown = (await entries(page)).filter((t) => t.startsWith("You") || t.startsWith("Agent"));
		expect(shown.map((t) => t.replace(/\s+/g, " "))).toEqual(said.map((t) => t.replace(/\s+/g, " ")));
		await noSeriousViolations(page, "session");
	});

	it("renders the model's Markdown through the one sanitizing sink: markup yes, script and handlers no", async () => {
		let alerted = false;
		page.on("dialog", (d) => {
			alerted = true;
			void d.dismiss();
		});
		const hostile =
			'echo: **bold** and [a link](https://example.invalid/x) <img src=x onerror="alert(1)"> <script>alert(2)</script> [js](javascript:alert(3))';
		await page.getByLabel("Message").fill(hostile);
		await page.getByLabel("Message").press("Enter");
		const log = page.getByRole("log", { name: "Transcript" });
		await log.getByText("bold", { exact: true }).waitFor({ timeout: 15_000 });
		expect(await log.locator("strong", { hasText: "bold" }).count()).toBe(1);
		const link = log.getByRole("link", { name: "a link" });
		expect(await link.getAttribute("rel")).toBe("noopener noreferrer");
		expect(await log.locator("img, script, [onerror]").count()).toBe(0);
		expect(await log.locator('a[href^="javascript:"]').count()).toBe(0);
		// Raw HTML from the model is shown as text, tags and all (and so is the prompt).
		const agent = await lastAgentText(page);
		expect(agent).toContain('<img src=x onerror="alert(1)">');
		expect(agent).toContain("<script>alert(2)</script>");
		await until(async () => (await page.getByRole("button", { name: "Send" }).count()) === 1, 10_000);
		expect(alerted).toBe(false);
	});

	it("fits a phone: nothing scrolls sideways at 390×844, light and dark", async () => {
		await page.setViewportSize({ width: 390, height: 844 });
		for (const scheme of ["light", "dark"] as const) {
			await page.emulateMedia({ colorScheme: scheme });
			for (const hash of ["#/", `#/sessions/${encodeURIComponent(sessionId)}`, "#/approvals"]) {
				await page.goto(`${origin}/console/${hash}`);
				await page.getByRole("button", { name: "Sign out" }).waitFor();
				await page.waitForTimeout(300);
				const { scrollWidth, clientWidth } = await page.evaluate(() => {
					type Root = { scrollWidth: number; clientWidth: number };
					const root = (globalThis as unknown as { document: { documentElement: Root } }).document.documentElement;
					return { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth };
				});
				expect(scrollWidth, `${scheme} ${hash}`).toBeLessThanOrEqual(clientWidth);
			}
			await noSeriousViolations(page, `phone ${scheme}`);
			await shot(page, `phone-${scheme}`);
		}
		await page.goto(`${origin}/console/#/sessions/${encodeURIComponent(sessionId)}`);
		await page.getByRole("log", { name: "Transcript" }).waitFor();
		await shot(page, "phone-session");
	});

	it("signs out: the credential leaves the tab", async () => {
		await page.getByRole("button", { name: "Sign out" }).click();
		await page.getByLabel("Token or API key").waitFor();
		expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
		// No request carried the credential in its URL.
		expect(proxy.requests.some((r) => r.split("\r\n")[0]?.includes(token))).toBe(false);
		expect(cspViolations).toEqual([]);
		await page.close();
	});

	it("shows a key only what its scopes allow: an approver sees the inbox and no session controls", async () => {
		const approver = await openConsole();
		await signIn(approver, approverKey);
		const nav = approver.getByRole("navigation", { name: "Console" });
		await nav.getByRole("link", { name: "Approvals" }).waitFor();
		expect(await approver.getByRole("link", { name: "New session" }).count()).toBe(0);
		expect(await approver.getByRole("button", { name: /Delete|Resume|Create session/ }).count()).toBe(0);
		await nav.getByRole("link", { name: "Approvals" }).click();
		await approver.getByRole("heading", { name: "Approvals" }).waitFor();

		// The admin's session, shared for answering; with the keyboard alone: tick "Remember for this
		// session" and press Block.
		const shared = await gw.api(`/v1/sessions/${sessionId}/access`, {
			method: "PUT",
			json: { grants: [{ principal: "approver", can: ["answer"] }] },
		});
		expect(shared.status, JSON.stringify(shared.body)).toBe(200);
		// The tab in the background: a dialog that opens then gives a title badge and a notification
		// (the Notification API stubbed, permission granted: headless Chromium shows none to look at).
		await approver.evaluate(() => {
			const w = globalThis as unknown as Record<string, any>;
			Object.defineProperty(w.document, "visibilityState", { get: () => "hidden", configurable: true });
			w.shown = [];
			w.Notification = class {
				static permission = "granted";
				constructor(title: string, options: { body: string }) {
					w.shown.push([title, options.body]);
				}
			};
		});
		const prompt = gw.api(`/v1/sessions/${sessionId}/prompt`, {
			method: "POST",
			json: { message: "bash: rm -rf ./y" },
		});
		expect((await prompt).status).toBe(202);
		const dialog = approver.getByRole("region", { name: /rm -rf \.\/y/ });
		await dialog.waitFor({ timeout: 15_000 });
		await until(async () => (await approver.title()) === "(1) pi-gateway console", 5000);
		expect(await approver.evaluate(() => (globalThis as unknown as { shown: unknown }).shown)).toEqual([
			["Approval needed", "Allow this bash command?\n\n  rm -rf ./y"],
		]);
		await approver.evaluate(() => {
			const d = (globalThis as unknown as { document: any }).document;
			Object.defineProperty(d, "visibilityState", { get: () => "visible", configurable: true });
			d.dispatchEvent(new (globalThis as unknown as { Event: any }).Event("visibilitychange"));
		});
		expect(await approver.title()).toBe("pi-gateway console");
		await tabTo(approver, "checkbox", "Remember for this session");
		await approver.keyboard.press("Space");
		expect(await dialog.getByLabel("Remember for this session").isChecked()).toBe(true);
		await tabTo(approver, "button", "Block", true);
		await approver.keyboard.press("Enter");
		await dialog.getByText("Answered: Block by approver").waitFor();
		const answered = (await gw.api(`/v1/sessions/${sessionId}/approvals?status=answered`)).body.approvals.find(
			(a: { title: string }) => a.title.includes("rm -rf ./y"),
		);
		expect(answered.answer).toEqual({ value: "Block" });
		// Remembered for the session: the same dialog again is answered at once, by the policy.
		const again = await gw.api(`/v1/sessions/${sessionId}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: rm -rf ./y" },
		});
		expect(again.status).toBe(200);
		const same = (await gw.api(`/v1/sessions/${sessionId}/approvals`)).body.approvals.filter((a: { title: string }) =>
			a.title.includes("rm -rf ./y"),
		);
		expect(same.map((a: { resolvedBy: string }) => a.resolvedBy)).toEqual([
			"approver",
			expect.stringMatching(/^policy:remembered-/),
		]);
		expect(same[1].answer).toEqual({ value: "Block" });
		await approver.getByRole("button", { name: "Sign out" }).click();
		await approver.close();
	});

	it("deletes a session and resumes a stopped one from the list", async () => {
		const admin = await openConsole();
		await signIn(admin, token);
		// A second session takes the one live pi slot: the first is hibernated (stopped).
		const second = await gw.session({ name: "second" });
		await until(async () => (await gw.api(`/v1/sessions/${sessionId}`)).body.status === "stopped", 20_000);
		// Deleted from its own page (the list only links to it).
		await admin.getByRole("link", { name: /^second/ }).click();
		await admin.getByRole("heading", { name: "second" }).waitFor();
		admin.once("dialog", (d) => void d.accept());
		await admin.getByRole("button", { name: "Delete second" }).click();
		await until(async () => (await gw.api(`/v1/sessions/${second}`)).status === 404, 20_000);
		await admin.getByRole("link", { name: /^second/ }).waitFor({ state: "detached", timeout: 10_000 });

		const resume = admin.getByRole("button", { name: "Resume console-e2e" });
		await resume.click();
		await until(async () => (await gw.api(`/v1/sessions/${sessionId}`)).body.pid !== null, 30_000);
		await resume.waitFor({ state: "detached", timeout: 10_000 });
		await admin.close();
	});

	it("lists sessions a page at a time: Show more sessions reads the next page by its cursor", async () => {
		// The one live slot is console-e2e's, just resumed: it hibernates once it is idle enough.
		const third = await until(async () => {
			const res = await gw.api("/v1/sessions", { method: "POST", json: { name: "third" } });
			return res.status === 201 && (res.body.id as string);
		}, 30_000);
		const admin = await openConsole();
		// Pages of one here (the console asks for 100): the gateway's own first page and cursor.
		await admin.route(/\/v1\/sessions\?limit=100$/, async (route) => {
			const response = await route.fetch({ url: route.request().url().replace("limit=100", "limit=1") });
			await route.fulfill({ response });
		});
		await signIn(admin, token);
		await admin.getByRole("link", { name: "console-e2e" }).waitFor({ timeout: 10_000 });
		expect(await admin.getByRole("link", { name: "third" }).count()).toBe(0);
		await admin.getByRole("button", { name: "Show more sessions" }).click();
		await admin.getByRole("link", { name: "third" }).waitFor({ timeout: 10_000 });
		await admin.getByRole("button", { name: "Show more sessions" }).waitFor({ state: "detached", timeout: 10_000 });
		await admin.close();
		await gw.api(`/v1/sessions/${third}`, { method: "DELETE" });
	});
});
