import { createServer, type Server } from "node:http";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchChromium } from "../helpers/chromium.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";

// A real browser's native EventSource on a stream ticket, cut off after the ticket expired: its own
// reconnect (same URL, Last-Event-ID) must be let in and lose nothing. Headless Chromium (Debian's
// `chromium`) driven by playwright-core; the page comes from another loopback origin (CORS), and a
// TCP proxy between browser and gateway is what the test cuts.
const ttlMs = 1000;
let gw: TestGateway;
let page: Server;
let proxy: TcpProxy;
let browser: BrowserContext;
let chrome: Awaited<ReturnType<typeof launchChromium>> | undefined;

/** The event types the page listens for (EventSource has no catch-all for named events). */
const types = [
	"stream_open",
	"session_status",
	"response",
	"agent_start",
	"agent_end",
	"agent_settled",
	"run_changes",
	"turn_start",
	"turn_end",
	"message_start",
	"message_update",
	"message_end",
	"gap",
	"dropped",
];
/** Keeps every event with its lastEventId, and counts opens and errors. */
const html = `<!doctype html><meta charset="utf-8"><title>es</title><script>
const types = ${JSON.stringify(types)};
window.seen = []; window.opens = 0; window.errors = [];
const es = new EventSource(new URLSearchParams(location.search).get("src"));
for (const type of types) es.addEventListener(type, (e) => seen.push({ id: e.lastEventId, type, data: e.data }));
es.onopen = () => { opens++; };
es.onerror = () => { errors.push(es.readyState); };
window.es = es;
</script>`;

beforeAll(async () => {
	page = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(html));
	await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
	const origin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
	gw = await startTestGateway({
		...noPool,
		token: "browser-test-token",
		streamTicketTtlMs: ttlMs,
		corsOrigins: [origin],
	});
	proxy = await startProxy(Number(new URL(gw.url).port));
	chrome = await launchChromium();
	browser = chrome.browser;
}, 60_000);

afterAll(async () => {
	await chrome?.close();
	await proxy?.close();
	await new Promise((resolve) => page?.close(resolve));
	await gw?.stop();
});

type Seen = { id: string; type: string; data: string };
const seen = (p: Page) => p.evaluate(() => (globalThis as unknown as { seen: Seen[] }).seen);
const count = async (p: Page, type: string) => (await seen(p)).filter((e) => e.type === type).length;

it("a native EventSource on a ticket reconnects after the ticket expired, with Last-Event-ID, losing nothing", async () => {
	const id = await gw.session({ persist: false });
	const ticket = await gw.api(`/v1/sessions/${id}/events/ticket`, { method: "POST" });
	expect(ticket.status).toBe(201);
	const src = `http://127.0.0.1:${proxy.port}${ticket.body.eventsUrl}`;
	const tab = await browser.newPage();
	await tab.goto(`http://127.0.0.1:${(page.address() as { port: number }).port}/?src=${encodeURIComponent(src)}`);
	await until(async () => (await count(tab, "stream_open")) === 1);

	expect(
		(await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: one" } })).status,
	).toBe(200);
	// A run's last event is its run_changes (what it changed in the folder), after agent_settled.
	await until(async () => (await count(tab, "run_changes")) === 1);
	const beforeCut = (await seen(tab)).at(-1)?.id;

	// Past the ticket's expiry (a fresh stream could no longer open with it), cut the connection while
	// a run goes on, so events happen while the browser is away.
	await until(() => Date.now() > Date.parse(ticket.body.expiresAt) + 200, 5000);
	proxy.cut();
	const second = gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: two" } });
	expect((await second).status).toBe(200);

	// The browser's own reconnect, after its retry delay: the gateway lets it in, it resumes.
	await until(async () => (await count(tab, "run_changes")) === 2, 20_000);
	expect(await tab.evaluate(() => (globalThis as unknown as { opens: number }).opens)).toBe(2);
	const heads = proxy.requests.filter((r) => r.startsWith(`GET /v1/sessions/${id}/events?ticket=`));
	expect(heads).toHaveLength(2);
	expect(heads[1]).toMatch(new RegExp(`\\r\\nlast-event-id: ${beforeCut}\\r\\n`, "i"));

	// Nothing lost, nothing twice: the page's ids are the log's, in order, from the first event it saw.
	const events = (await seen(tab)).filter((e) => e.type !== "stream_open");
	const ids = events.map((e) => Number(e.id));
	const log = gw.registry
		.get(id)
		.events.since((ids[0] as number) - 1)
		.events.filter((e) => e.seq <= (ids.at(-1) as number));
	expect(log.filter((e) => !types.includes(e.type)).map((e) => e.type)).toEqual([]);
	expect(ids).toEqual(log.map((e) => e.seq));
	expect(events.map((e) => e.data)).toEqual(log.map((e) => String(e.data)));
	await tab.close();
	await gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
}, 60_000);
