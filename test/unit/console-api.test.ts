import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { brotliDecompressSync, gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstLoadBudgetBytes } from "../../console/budget.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// What the console needs of the API and of its build: GET /v1/whoami (who am I, which scopes: the
// console shows only what they allow) and a first load small enough for a phone.

describe("GET /v1/whoami", () => {
	const token = "whoami-test-token-0123456789";
	let gw: TestGateway;
	let dir: string;
	let readerKey: string;
	let approverKey: string;
	beforeAll(async () => {
		dir = mkdtempSync(join(tmpdir(), "pi-gateway-whoami-"));
		const keysFile = join(dir, "keys.json");
		readerKey = createKey(keysFile, "reader", ["sessions:read"]).secret;
		approverKey = createKey(keysFile, "approver", ["approvals:read", "approvals:answer"]).secret;
		gw = await startTestGateway({ token, keysFile });
	});
	afterAll(async () => {
		await gw?.stop();
		rmSync(dir, { recursive: true, force: true });
	});
	const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

	it("names the token's admin with every scope", async () => {
		const { status, body } = await gw.api("/v1/whoami");
		expect(status).toBe(200);
		expect(body).toEqual({
			principal: "admin",
			scopes: ["sessions:read", "sessions:write", "approvals:read", "approvals:answer", "admin"],
			anonymous: false,
		});
	});

	it("answers any credential, whatever its scopes, with exactly them", async () => {
		expect((await gw.api("/v1/whoami", as(readerKey))).body).toEqual({
			principal: "reader",
			scopes: ["sessions:read"],
			anonymous: false,
		});
		const approver = await gw.api("/v1/whoami", as(approverKey));
		expect(approver.status).toBe(200);
		expect(approver.body.scopes).toEqual(["approvals:read", "approvals:answer"]);
	});

	it("is 401 without a credential or with a wrong one", async () => {
		expect((await gw.api("/v1/whoami", { headers: { authorization: "" } })).status).toBe(401);
		expect((await gw.api("/v1/whoami", as("not-a-key"))).status).toBe(401);
	});

	it("declares in the spec that any credential may call it", () => {
		const spec = readFileSync(resolve(import.meta.dirname, "../../openapi.yaml"), "utf8");
		const block = spec.slice(spec.indexOf("  /v1/whoami:"), spec.indexOf("\n  /", spec.indexOf("  /v1/whoami:") + 5));
		expect(block).toContain("operationId: systemWhoami");
		expect(block).toMatch(/security:\n\s+- bearer: \[\]/);
	});
});

describe("the console's build", () => {
	it(`fits the first-load budget: JS + CSS ≤ ${firstLoadBudgetBytes / 1024} KB gzipped; the review is a lazy chunk`, () => {
		const out = mkdtempSync(join(tmpdir(), "pi-gateway-console-build-"));
		try {
			execFileSync(
				process.execPath,
				[resolve("node_modules/vite/bin/vite.js"), "build", "-c", "console/vite.config.ts", "--outDir", out],
				{ stdio: "pipe" },
			);
			// Each file with its brotli and gzip copies, made once at build for the gateway to send as they are.
			expect(readdirSync(out).sort()).toEqual(
				["console-review.js", "console-schema-check.js", "console.css", "console.js", "index.html"]
					.flatMap((f) => [f, `${f}.br`, `${f}.gz`])
					.sort(),
			);
			for (const f of ["console.js", "index.html"]) {
				expect(brotliDecompressSync(readFileSync(join(out, `${f}.br`)))).toEqual(readFileSync(join(out, f)));
				expect(gunzipSync(readFileSync(join(out, `${f}.gz`)))).toEqual(readFileSync(join(out, f)));
			}
			const gz = (f: string) => gzipSync(readFileSync(join(out, f)), { level: 9 }).length;
			const total = gz("console.js") + gz("console.css") + gz("index.html");
			expect(total).toBeLessThanOrEqual(firstLoadBudgetBytes);
			// The diff views and the highlighter are fetched only on the changes view, never on the first load.
			const main = readFileSync(join(out, "console.js"), "utf8");
			// Named with the build's id, as the page names the script and stylesheet: a new build, a new URL.
			const id = /console\.js\?v=([\w-]{12})"/.exec(readFileSync(join(out, "index.html"), "utf8"))?.[1];
			expect(id).toBeTruthy();
			expect(main).toContain(`./console-review.js?v=${id}`);
			expect(readFileSync(join(out, "index.html"), "utf8")).toContain(`./console.css?v=${id}`);
			expect(readFileSync(join(out, "console-review.js"), "utf8")).not.toMatch(/\.\/console\.js["'`]/);
			expect(main).not.toContain("hljs-");
			// No inline script or style for the CSP to allow.
			const html = readFileSync(join(out, "index.html"), "utf8");
			expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=/);
		} finally {
			rmSync(out, { recursive: true, force: true });
		}
	}, 60_000);
});
