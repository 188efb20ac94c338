import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// GET /v1/sessions pages (limit/cursor, oldest first) and filters (status, node, principal), on
// one node with real pi.
let gw: TestGateway;
let dir: string;
const key = { alice: "", bob: "" };
const ids = { alice: [] as string[], bob: [] as string[] };
const as = (who: keyof typeof key) => ({ authorization: `Bearer ${key[who]}` });
type Page = {
	sessions: { id: string; node: string | null; status: string }[];
	nextCursor: string | null;
	hasMore: boolean;
};

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-list-"));
	const keysFile = join(dir, "keys.json");
	key.alice = createKey(keysFile, "alice", ["sessions:read", "sessions:write"]).secret;
	key.bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, keysFile });
	for (const who of ["alice", "bob", "alice", "bob", "alice"] as const) {
		const res = await gw.api("/v1/sessions", { method: "POST", headers: as(who), json: {} });
		expect(res.status).toBe(201);
		ids[who].push(res.body.id);
	}
}, 60_000);
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const list = async (query = "", who?: keyof typeof key) => {
	const res = await gw.api<Page>(`/v1/sessions${query}`, who ? { headers: as(who) } : {});
	expect(res.status).toBe(200);
	return res.body;
};
const all = () => [ids.alice[0], ids.bob[0], ids.alice[1], ids.bob[1], ids.alice[2]];

describe("GET /v1/sessions", () => {
	it("pages oldest first: limit, nextCursor, hasMore, and every session exactly once", async () => {
		const seen: string[] = [];
		let cursor: string | null = null;
		let pages = 0;
		do {
			const page: Page = await list(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
			expect(page.sessions.length).toBeLessThanOrEqual(2);
			expect(page.hasMore).toBe(page.nextCursor !== null);
			seen.push(...page.sessions.map((s) => s.id));
			cursor = page.nextCursor;
			pages++;
		} while (cursor);
		expect(seen).toEqual(all());
		expect(pages).toBe(3);
	});

	it("pages one principal's own sessions among another's: each page from its cursor, none of bob's", async () => {
		const seen: string[] = [];
		let cursor: string | null = null;
		do {
			const page: Page = await list(`?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, "alice");
			seen.push(...page.sessions.map((s) => s.id));
			cursor = page.nextCursor;
		} while (cursor);
		expect(seen).toEqual(ids.alice);
	});

	it("answers an unpaged call with the first page (default limit 100) and says it is the last", async () => {
		const page = await list();
		expect(page.sessions.map((s) => s.id)).toEqual(all());
		expect(page).toMatchObject({ hasMore: false, nextCursor: null });
	});

	it("says which node owns a session: null on a single node; a node filter matches nothing", async () => {
		expect((await list()).sessions.every((s) => s.node === null)).toBe(true);
		expect((await gw.api(`/v1/sessions/${ids.alice[0]}`)).body.node).toBeNull();
		expect((await list("?node=somewhere")).sessions).toEqual([]);
	});

	it("filters by status", async () => {
		const run = await gw.api(`/v1/sessions/${ids.bob[1]}/prompt`, {
			method: "POST",
			headers: as("bob"),
			json: { message: "slow: 40" },
		});
		expect(run.status).toBe(202);
		await until(async () => (await list("?status=running")).sessions.length === 1);
		expect((await list("?status=running")).sessions.map((s) => s.id)).toEqual([ids.bob[1]]);
		expect((await list("?status=idle")).sessions.map((s) => s.id)).not.toContain(ids.bob[1]);
		await gw.api(`/v1/sessions/${ids.bob[1]}/abort`, { method: "POST", headers: as("bob") });
	});

	it("filters by owner principal: any for an admin, only its own for anyone else (403)", async () => {
		expect((await list("?principal=alice")).sessions.map((s) => s.id)).toEqual(ids.alice);
		expect((await list("?principal=bob&limit=1")).sessions.map((s) => s.id)).toEqual([ids.bob[0]]);
		expect((await list("", "alice")).sessions.map((s) => s.id)).toEqual(ids.alice);
		expect((await list("?principal=alice", "alice")).sessions.map((s) => s.id)).toEqual(ids.alice);
		const refused = await gw.api("/v1/sessions?principal=bob", { headers: as("alice") });
		expect(refused.status).toBe(403);
	});

	it("refuses a cursor it did not hand out and a limit out of range (400)", async () => {
		expect((await gw.api("/v1/sessions?cursor=nonsense")).status).toBe(400);
		// The shape of a cursor, with a time that is no time: the same 400, as problem+json.
		const notATime = Buffer.from(`2026-99-99T99:99:99.999Z ${ids.alice[0]}`).toString("base64url");
		const refused = await gw.fetch(`/v1/sessions?cursor=${notATime}`);
		expect(refused.status).toBe(400);
		expect(refused.headers.get("content-type")).toContain("application/problem+json");
		expect(((await refused.json()) as { code: string }).code).toBe("invalid_cursor");
		expect((await gw.api("/v1/sessions?limit=0")).status).toBe(400);
		expect((await gw.api("/v1/sessions?limit=501")).status).toBe(400);
	});

	it("refuses an empty filter (400 naming it), which would match nobody and look like no sessions", async () => {
		for (const filter of ["principal", "node"]) {
			const { status, body, res } = await gw.api(`/v1/sessions?${filter}=`);
			expect(status).toBe(400);
			expect(res.headers.get("content-type")).toContain("application/problem+json");
			expect((body as { detail: string }).detail).toContain(`name a ${filter}`);
		}
	});
});
