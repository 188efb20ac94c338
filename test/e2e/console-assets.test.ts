import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../helpers/chromium.ts";
import { buildConsole } from "../helpers/console-build.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// The console's files on the wire (issue 46 item 5): each sent as the build compressed it (br,
// else gzip, else as it is, by Accept-Encoding) with a Content-Length that is the sent body's and
// Vary: Accept-Encoding; the page revalidated every time, its versioned scripts kept for a year.
// Then what a browser really fetches on the first load, counted by Chromium itself.
let gw: TestGateway;

beforeAll(async () => {
	buildConsole();
	gw = await startTestGateway({ warmPool: 0 });
}, 120_000);

afterAll(async () => {
	await gw?.stop();
});

/** A raw HTTP exchange (fetch would decompress and drop Content-Length): status, headers and the bytes as sent. */
async function raw(path: string, headers: Record<string, string> = {}) {
	const { request } = await import("node:http");
	return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
		(done, fail) => {
			const req = request(`${gw.url}${path}`, { headers }, (res) => {
				const chunks: Buffer[] = [];
				res.on("data", (c: Buffer) => chunks.push(c));
				res.on("end", () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
			});
			req.on("error", fail);
			req.end();
		},
	);
}

describe("the console's files on the wire", () => {
	let version: string;
	let plain: Buffer;

	it("serves the page uncached and names its files with the build's id", async () => {
		const page = await raw("/console/", { "accept-encoding": "identity" });
		expect(page.status).toBe(200);
		expect(page.headers["cache-control"]).toBe("no-cache");
		expect(page.headers.vary).toBe("Accept-Encoding");
		const html = page.body.toString("utf8");
		version = /src="\.\/console\.js\?v=([\w-]+)"/.exec(html)?.[1] as string;
		expect(version, html).toBeTruthy();
		expect(html).toContain(`href="./console.css?v=${version}"`);
		plain = (await raw(`/console/console.js?v=${version}`, { "accept-encoding": "identity" })).body;
		expect(plain.length).toBeGreaterThan(10_000);
	});

	it.each([
		["gzip, deflate, br", "br"],
		["gzip, deflate", "gzip"],
		["br;q=0, gzip", "gzip"],
		["identity", undefined],
		["", undefined],
	])("Accept-Encoding %j → %s, with its own length and ETag, kept a year", async (accept, encoding) => {
		const res = await raw(`/console/console.js?v=${version}`, accept ? { "accept-encoding": accept } : {});
		expect(res.status).toBe(200);
		expect(res.headers["content-encoding"]).toBe(encoding);
		expect(res.headers.vary).toBe("Accept-Encoding");
		expect(res.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
		expect(Number(res.headers["content-length"])).toBe(res.body.length);
		const { brotliDecompressSync } = await import("node:zlib");
		const decoded =
			encoding === "br" ? brotliDecompressSync(res.body) : encoding === "gzip" ? gunzipSync(res.body) : res.body;
		expect(decoded.equals(plain)).toBe(true);
		if (encoding) expect(res.body.length).toBeLessThan(plain.length / 2);
		// Revalidated by its own ETag (a 304 keeps the headers that say how it varies).
		const etag = String(res.headers.etag);
		expect(etag).toMatch(encoding ? new RegExp(`-${encoding}"$`) : /^"[\w-]+"$/);
		const again = await raw(`/console/console.js?v=${version}`, {
			...(accept ? { "accept-encoding": accept } : {}),
			"if-none-match": etag,
		});
		expect(again.status).toBe(304);
		expect(again.headers.vary).toBe("Accept-Encoding");
	});

	it("revalidates a file asked for without the build's id, or with another", async () => {
		for (const path of ["/console/console.js", "/console/console.css?v=someoldbuild", "/console/console-review.js"]) {
			const res = await raw(path, { "accept-encoding": "br" });
			expect(res.status, path).toBe(200);
			expect(res.headers["cache-control"], path).toBe("no-cache");
		}
	});

	it("a browser's first load: the page, one script and one stylesheet, brotli on the wire", async () => {
		const chrome = await launchChromium({ width: 390, height: 844 });
		try {
			const page = await chrome.browser.newPage();
			const cdp = await chrome.browser.newCDPSession(page);
			await cdp.send("Network.enable");
			const sent = new Map<string, { url: string; encoding?: string }>();
			let wire = 0;
			// The console's own files (the page's API calls, such as a health check, are not its weight).
			cdp.on("Network.responseReceived", (e) => {
				if (new URL(e.response.url).pathname.startsWith("/console/"))
					sent.set(e.requestId, { url: e.response.url, encoding: e.response.headers["content-encoding"] });
			});
			cdp.on("Network.loadingFinished", (e) => {
				if (sent.has(e.requestId)) wire += e.encodedDataLength;
			});
			await page.goto(`${gw.url}/console/`);
			await page.getByLabel("Token or API key").waitFor();
			await page.waitForLoadState("networkidle");
			const files = [...sent.values()].map((s) => `${new URL(s.url).pathname} ${s.encoding ?? "identity"}`).sort();
			expect(files).toEqual(["/console/ br", "/console/console.css br", "/console/console.js br"]);
			// Headers included: what the phone's link carries. docs/console.md gives the number.
			console.log(`first load on the wire: ${wire} bytes`);
			expect(wire).toBeLessThan(60 * 1024);
		} finally {
			await chrome.close();
		}
	}, 60_000);
});
