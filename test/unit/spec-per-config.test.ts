import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, expect, it, vi } from "vitest";

// app.ts builds the routes' document once per process and gives it to every app it builds after:
// right only while no route or schema depends on the config. Each app here comes from a fresh copy
// of the modules (vi.resetModules), so each builds its own document.
const dataDir = mkdtempSync(join(tmpdir(), "pi-gateway-spec-per-config-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function servedSpec(input: Record<string, unknown>): Promise<string> {
	vi.resetModules();
	const { createApp } = await import("../../src/app/app.ts");
	const { parseConfig } = await import("../../src/config/config.ts");
	const { SessionRegistry } = await import("../../src/sessions/registry/registry.ts");
	const { sqliteSessions } = await import("../../src/store/sqlite/sessions.ts");
	const logger = pino({ level: "silent" });
	const config = parseConfig({ dataDir, ...input });
	const app = createApp(config, new SessionRegistry(config, logger, sqliteSessions(config.dataDir)), logger);
	const res = await app.request("http://127.0.0.1:8787/openapi.json", {
		headers: { authorization: `Bearer ${config.token}` },
	});
	expect(res.status).toBe(200);
	return await res.text();
}

it("every config gets the same API document, so one built document serves every app of a process", async () => {
	const plain = await servedSpec({});
	const otherwise = await servedSpec({
		token: "a-token-of-sixteen-chars-or-more",
		maxBodyBytes: 12_345,
		corsOrigins: ["http://console.example"],
		rateLimitRequests: 5,
		maxSessions: 3,
		maxLiveSessions: 2,
		warmPool: 0,
		piCommand: ["/bin/true"],
		sandbox: "off",
		demo: false,
		jwtJwksUrl: "http://127.0.0.1:9/jwks.json",
		jwtIssuer: "https://issuer.example",
		jwtAudience: "pi-gateway",
	});
	expect(JSON.parse(otherwise).paths).toEqual(JSON.parse(plain).paths);
	expect(otherwise).toBe(plain);
});
