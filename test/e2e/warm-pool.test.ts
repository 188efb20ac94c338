import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { freemem, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { autoWarmPool, autoWarmPoolMax } from "../../src/config/config.ts";
import { createKey } from "../../src/http/auth/keys.ts";
import { startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Real pi, demo model: a pool of two pre-started processes.
let gw: TestGateway;
const poolPids = () => new Set(gw.registry.pool?.readyPids ?? []);

beforeAll(async () => {
	gw = await startTestGateway({ warmPool: 2 });
	await until(() => gw.registry.pool?.readyCount === 2, 20_000);
});
afterAll(() => gw?.stop());

describe("the warm pool", () => {
	it("serves a plain create (a name allowed) from a pre-started pi, then refills", async () => {
		const before = poolPids();
		expect(before.size).toBe(2);
		const res = await gw.api("/v1/sessions", { method: "POST", json: { name: "warm" } });
		expect(res.status).toBe(201);
		expect(before.has(res.body.pid)).toBe(true);
		expect(res.body).toMatchObject({ name: "warm", status: "idle", persist: true });
		expect((await gw.api(`/v1/sessions/${res.body.id}/state`)).body.sessionName).toBe("warm");
		const run = await gw.api(`/v1/sessions/${res.body.id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: warm hello" },
		});
		expect(run.body.text).toBe("warm hello");
		await until(() => gw.registry.pool?.readyCount === 2, 20_000);
		expect(poolPids().has(res.body.pid)).toBe(false);
	});

	it("starts other option sets cold", async () => {
		const before = poolPids();
		const res = await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		expect(res.status).toBe(201);
		expect(before.has(res.body.pid)).toBe(false);
		expect(poolPids()).toEqual(before);
	});

	it("shows the pool in /metrics and counts it against live processes", async () => {
		const metrics = await gw.api("/metrics");
		expect(metrics.body).toContain("pi_gateway_warm_pool_size 2");
		// Every pi child counts as a process, the pool's included (it read 0 beside a pool of 2).
		const live = gw.registry.list().filter((s) => s.isAlive && s.pid !== undefined).length;
		expect(metrics.body).toMatch(new RegExp(`^pi_gateway_pi_processes ${live + 2}$`, "m"));
		expect(gw.registry.liveCount).toBe(gw.registry.list().filter((s) => s.hasProcess).length + 2);
	});
});

describe("the warm pool in README's layout", () => {
	it("is on with no flag, sized by autoWarmPool from the machine's memory, and --warm-pool 0 turns it off", async () => {
		const readme = await startTestGateway();
		try {
			const expected = autoWarmPool(readme.config.maxLiveSessions, false, freemem());
			// Free memory moves a little between two reads: the rule's answer either side of it.
			expect([expected, autoWarmPool(readme.config.maxLiveSessions, false, freemem() * 1.1)]).toContain(
				readme.config.warmPool,
			);
			if (readme.config.warmPool > 0) {
				await until(() => readme.registry.pool?.readyCount === readme.config.warmPool, 20_000);
				const pooled = new Set(readme.registry.pool?.readyPids);
				// Every pi the pool holds is handed out, one create after another (a pi's start used to
				// make every pooled pi started before it stale: a full pool served one create).
				const created = [];
				for (let i = 0; i < readme.config.warmPool; i++)
					created.push(await readme.api("/v1/sessions", { method: "POST", json: {} }));
				for (const res of created) {
					expect(res.status).toBe(201);
					expect(pooled.has(res.body.pid)).toBe(true);
					// README's layout: the admin's session works in <root>/<its id>, as a cold one does.
					expect(res.body.cwd).toBe(join(realpathSync(readme.workspace), res.body.id));
				}
				// Creates faster than it refills: one finds it empty, and the pool doubles (up to its max).
				const pool = readme.registry.pool;
				for (let i = 0; i < readme.config.warmPool + 1 && pool?.target === readme.config.warmPool; i++)
					expect((await readme.api("/v1/sessions", { method: "POST", json: {} })).status).toBe(201);
				expect(pool?.target).toBe(Math.min(readme.config.warmPoolMax, 2 * readme.config.warmPool));
			}
		} finally {
			await readme.stop();
		}
		const off = await startTestGateway({ warmPool: 0 });
		try {
			expect(off.registry.pool).toBeUndefined();
		} finally {
			await off.stop();
		}
	});
});

describe("autoWarmPool", () => {
	const gb = 2 ** 30;
	it("keeps the whole pool (2N idle pi) within 1/16 of free memory, at most 2, a quarter of the live cap, 0 for a --pi-command; a burst grows it to at most 8 within the same bound", () => {
		expect(autoWarmPoolMax(32, false, 20 * gb)).toBe(8);
		expect(autoWarmPoolMax(32, false, 4 * gb)).toBe(1);
		expect(autoWarmPoolMax(32, false, 8 * gb)).toBe(3);
		expect(autoWarmPoolMax(12, false, 20 * gb)).toBe(3);
		expect(autoWarmPoolMax(32, true, 20 * gb)).toBe(0);
		expect(autoWarmPool(32, false, 20 * gb)).toBe(2);
		expect(autoWarmPool(32, false, 4 * gb)).toBe(1);
		expect(autoWarmPool(32, false, 3 * gb)).toBe(0);
		expect(autoWarmPool(7, false, 20 * gb)).toBe(1);
		expect(autoWarmPool(3, false, 20 * gb)).toBe(0);
		expect(autoWarmPool(32, true, 20 * gb)).toBe(0);
	});
});

// Keys for two principals (what `pi-gateway keys create` writes); the sandbox as the machine gives it.
describe("the warm pool and principals' areas", () => {
	let pgw: TestGateway;
	let keys: string;
	const key: Record<string, string> = {};
	const as = (who: string) => ({ authorization: `Bearer ${key[who]}` });
	const create = (who: string, body: Record<string, unknown> = {}) =>
		pgw.api("/v1/sessions", { method: "POST", json: body, headers: as(who) });
	/** What the agent sees of where it runs: its folder and its agent dir, as a bash tool call prints them. */
	const whereAmI = async (who: string, id: string) => {
		const run = await pgw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: 'bash: echo "$(pwd) $PI_CODING_AGENT_DIR $PI_OFFLINE"' },
			headers: as(who),
		});
		expect(run.status).toBe(200);
		// The demo model reports the tool's output on the last line.
		return (run.body.text as string).trim().split("\n").at(-1) as string;
	};

	beforeAll(async () => {
		keys = mkdtempSync(join(tmpdir(), "pi-gateway-pool-keys-"));
		for (const who of ["alice", "bob", "carol"])
			key[who] = createKey(join(keys, "keys.json"), who, ["sessions:read", "sessions:write"]).secret;
		// The operator's two, and one for each of the last two principals who created.
		pgw = await startTestGateway({ warmPool: 2, keysFile: join(keys, "keys.json") });
		await until(() => pgw.registry.pool?.readyCount === 2, 20_000);
	});
	afterAll(async () => {
		await pgw?.stop();
		rmSync(keys, { recursive: true, force: true });
	});

	it("never hands a principal a pi bound to another's folder; after a first create, its next is warm and alike", async () => {
		const root = realpathSync(pgw.workspace);
		const adminPids = new Set(pgw.registry.pool?.readyPids);
		// alice's first plain create: the operator's pooled pi works in the root's folder, not hers: cold.
		const first = await create("alice");
		expect(first.status).toBe(201);
		expect(adminPids.has(first.body.pid)).toBe(false);
		expect(first.body.cwd).toBe(join(root, "@alice", first.body.id));
		// Now one pi waits in alice's area (and the operator's still wait in the root).
		await until(() => pgw.registry.pool?.readyCount === 3, 20_000);
		const pooled = new Set(pgw.registry.pool?.readyPids);
		// bob never gets alice's (nor the operator's): cold, in his own area.
		const bobs = await create("bob");
		expect(bobs.status).toBe(201);
		expect(pooled.has(bobs.body.pid)).toBe(false);
		expect(bobs.body.cwd).toBe(join(root, "@bob", bobs.body.id));
		// alice's second: the pi that waited in her area, in a folder of its own there, named as asked.
		const second = await create("alice", { name: "warm-alice" });
		expect(second.status).toBe(201);
		expect(pooled.has(second.body.pid)).toBe(true);
		expect(adminPids.has(second.body.pid)).toBe(false);
		expect(second.body.cwd).toBe(join(root, "@alice", second.body.id));
		expect(second.body.name).toBe("warm-alice");
		// Indistinguishable from her cold one: the same kind of folder, the same agent dir, the same env.
		const cold = (await whereAmI("alice", first.body.id)).split(" ");
		const warm = (await whereAmI("alice", second.body.id)).split(" ");
		expect(warm[1]).toBe(cold[1]);
		expect(warm[2]).toBe(cold[2]);
		expect(cold[0]).toMatch(new RegExp(`${first.body.id}$`));
		expect(warm[0]).toMatch(new RegExp(`${second.body.id}$`));
		// bob's second is warm too, from his own area's pool.
		await until(() => pgw.registry.pool?.readyCount === 4, 20_000);
		const again = new Set(pgw.registry.pool?.readyPids);
		const bobs2 = await create("bob");
		expect(again.has(bobs2.body.pid)).toBe(true);
		expect(bobs2.body.cwd).toBe(join(root, "@bob", bobs2.body.id));
	});

	it("never hands out a pi whose agent folder changed while it started: it loads what a cold start would", {
		timeout: 90_000,
	}, async () => {
		// carol's first create starts her area's pool; while that pi starts, an extension lands in
		// her agent folder (as her agent could drop one). The pi she gets next must have loaded it.
		const first = await create("carol");
		expect(first.status).toBe(201);
		const agents = join(pgw.config.dataDir, "agents", "@carol");
		// The pool makes its pi's folder just before starting it.
		const area = join(realpathSync(pgw.workspace), "@carol");
		await until(() => readdirSync(area).some((name) => name !== first.body.id), 20_000);
		mkdirSync(join(agents, "extensions"), { recursive: true });
		const extension = `import { writeFileSync } from "node:fs"; export default function () { writeFileSync(process.cwd() + "/loaded", "x"); }`;
		writeFileSync(join(agents, "extensions", "late.ts"), extension);
		// Nothing starting any more: carol's pool holds a pi that is ready.
		await until(() => pgw.registry.pool?.readyCount === pgw.registry.pool?.size, 30_000);
		const next = await create("carol");
		expect(next.status).toBe(201);
		expect(existsSync(join(next.body.cwd, "loaded"))).toBe(true);
	});
});
