import { rmSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { startGateway } from "../../src/app/server.ts";
import type { SessionRegistry } from "../../src/sessions/registry/registry.ts";
import type { SqliteStore } from "../../src/store/sqlite/sessions.ts";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// Issue 10 items 10, 12 and 13: faults from outside the API (a crash, a full disk, a broken
// registry) must give the documented answers and never take the gateway down. Real pi throughout.
const token = "faults-token-0123456789";
let gw: TestGateway | undefined;
afterEach(async () => {
	await gw?.stop();
	gw = undefined;
});

/** A logger whose lines a test can read. */
function memoryLogger() {
	const lines: Record<string, unknown>[] = [];
	const stream = new Writable({
		write(chunk, _enc, done) {
			for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
			done();
		},
	});
	return { logger: pino({ level: "info" }, stream), lines };
}

/** Three queued commands: the first holds the queue (a running bash), two wait behind it. */
async function busy(g: TestGateway, id: string) {
	const bash = (n: number) =>
		g.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: n === 0 ? "sleep 3" : `echo ${n}` } });
	const first = bash(0);
	await until(() => g.registry.get(id).queueDepth >= 1);
	const rest = [bash(1), bash(2)];
	await until(() => g.registry.get(id).queueDepth >= 3);
	return [first, ...rest];
}

describe("item 12: commands caught by a crash or a delete get the documented answers", () => {
	it("queued commands of a session whose pi crashed get 502 pi_crashed, not 500", async () => {
		gw = await startTestGateway({ ...noPool, token });
		const id = await gw.session();
		const pending = await busy(gw, id);
		gw.registry.get(id).kill("SIGKILL");
		const answers = await Promise.all(pending);
		for (const { status, body } of answers) {
			expect(status, JSON.stringify(body)).toBe(502);
			expect(body.code).toBe("pi_crashed");
		}
	});

	it("commands in flight or queued on a session being deleted get 410 session_deleted", async () => {
		gw = await startTestGateway({ ...noPool, token, shutdownGraceMs: 200 });
		const id = await gw.session();
		const pending = await busy(gw, id);
		expect((await gw.api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
		const answers = await Promise.all(pending);
		for (const { status, body } of answers) {
			expect(status, JSON.stringify(body)).toBe(410);
			expect(body.code).toBe("session_deleted");
		}
	});
});

describe("item 10: a full disk fails soft", () => {
	it("registry writes that fail are logged and surfaced (readyz 503, metrics, 507 on create); live sessions go on; it recovers", async () => {
		gw = await startTestGateway({ ...noPool, token });
		const live = await gw.session({ name: "live" });
		const store = sqlite(gw.registry);
		if (!store) throw new Error("no store");
		// SQLITE_FULL, portably: cap the file at its size, then fill what is left of it.
		const db = store.database;
		db.exec("CREATE TABLE IF NOT EXISTS ballast (b BLOB)");
		const pages = (db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
		db.exec(`PRAGMA max_page_count = ${pages + 2}`);
		// Then the free room left in the pages themselves, the page of the live session's row included
		// (rows after it by id, so a bigger record no longer fits where it is).
		for (const insert of [
			() => db.prepare("INSERT INTO ballast VALUES (randomblob(512))").run(),
			() => db.prepare("INSERT INTO ballast VALUES (randomblob(16))").run(),
			(n = Math.random()) => db.prepare("INSERT INTO sessions VALUES (?, '{}')").run(`zz_${n}`),
		]) {
			for (;;) {
				try {
					insert();
				} catch (error) {
					expect(String(error)).toMatch(/full/);
					break;
				}
			}
		}

		const refused = await gw.api("/v1/sessions", {
			method: "POST",
			json: { name: "new", appendSystemPrompt: "x".repeat(20_000) },
		});
		expect(refused.status).toBe(507);
		expect(refused.body.code).toBe("insufficient_storage");
		expect(gw.registry.size).toBe(1);
		// The timer's flush meets the full disk too, and the gateway stays up.
		await gw.api(`/v1/sessions/${live}/name`, { method: "PUT", json: { name: "n".repeat(200) } });
		const ready = await until(async () => {
			const r = await gw?.api("/readyz");
			return r?.status === 503 && r;
		});
		expect(ready.body.code).toBe("insufficient_storage");
		expect(ready.body.detail).toMatch(/full/);
		const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
		expect(metrics).toMatch(/^pi_gateway_registry_writable 0$/m);
		expect(metrics).toMatch(/^pi_gateway_registry_write_errors_total [1-9]/m);
		const run = await gw.api(`/v1/sessions/${live}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: still here" },
		});
		expect(run.status).toBe(200);
		expect(run.body.text).toBe("still here");

		// Space comes back: the gateway notices by itself.
		db.exec("DROP TABLE ballast; DELETE FROM sessions WHERE id LIKE 'zz_%'");
		db.exec("PRAGMA max_page_count = 1073741823");
		await until(async () => (await gw?.api("/readyz"))?.status === 200);
		const created = await gw.api("/v1/sessions", { method: "POST", json: { name: "after" } });
		expect(created.status).toBe(201);
		const saved = db.prepare("SELECT record FROM sessions WHERE id = ?").get(live) as { record: string };
		expect(JSON.parse(saved.record).name).toBe("n".repeat(200));
	});
});

describe("item 13: registry fragility", () => {
	it("a malformed row is named in the log and skipped; the other sessions come back", async () => {
		gw = await startTestGateway({ ...noPool, token });
		const a = await gw.session({ name: "a" });
		const b = await gw.session({ name: "b" });
		const db = sqlite(gw.registry)?.database;
		db?.prepare("INSERT INTO sessions (id, record) VALUES (?, ?)").run("ses_broken", "{not json");
		db?.prepare("INSERT INTO sessions (id, record) VALUES (?, ?)").run(
			"ses_shape",
			'{"id":"ses_shape","persist":true}',
		);
		await gw.close();
		const { logger, lines } = memoryLogger();
		const again = await startGateway({ ...gw.config, extensions: {}, port: 0 }, logger);
		try {
			const ids = again.registry.list().map((s) => s.id);
			expect(ids.sort()).toEqual([a, b].sort());
			const skipped = lines.filter((l) => l.msg === "registry: unreadable session skipped").map((l) => l.sessionId);
			expect(skipped.sort()).toEqual(["ses_broken", "ses_shape"]);
		} finally {
			await again.close();
		}
	});

	it("gateway.db deleted while running is noticed, logged and recreated from memory", async () => {
		const { logger, lines } = memoryLogger();
		const g = await startGateway(
			{ host: "127.0.0.1", port: 0, token, dataDir: join(process.env.TMPDIR ?? "/tmp", `pi-gw-del-${process.pid}`) },
			logger,
		);
		try {
			const auth = { authorization: `Bearer ${token}` };
			const res = await fetch(`${g.url}/v1/sessions`, {
				method: "POST",
				headers: { ...auth, "content-type": "application/json" },
				body: '{"name":"kept"}',
			});
			const { id } = (await res.json()) as { id: string };
			const file = join(g.config.dataDir, "gateway.db");
			unlinkSync(file);
			for (const suffix of ["-wal", "-shm"]) rmSync(file + suffix, { force: true });
			const ready = await fetch(`${g.url}/readyz`);
			expect(ready.status).toBe(200);
			expect(((await ready.json()) as { registry: { recreatedAt?: string } }).registry.recreatedAt).toBeTypeOf(
				"string",
			);
			expect(lines.some((l) => l.msg === "registry: gateway.db was deleted or replaced; recreated from memory")).toBe(
				true,
			);
			await until(() => {
				const row = sqlite(g.registry)?.database.prepare("SELECT record FROM sessions WHERE id = ?").get(id);
				return row !== undefined;
			});
		} finally {
			await g.close();
			rmSync(g.config.dataDir, { recursive: true, force: true });
		}
	});

	it("a session whose pi session file is gone fails to resume with session_file_missing", async () => {
		gw = await startTestGateway({ ...noPool, token });
		const id = await gw.session({ name: "forgetful" });
		await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: remember me" } });
		const file = (await gw.api(`/v1/sessions/${id}`)).body.piSessionFile as string;
		await gw.registry.get(id).stop("idle");
		unlinkSync(file);
		const resumed = await gw.api(`/v1/sessions/${id}/resume`, { method: "POST" });
		expect(resumed.status).toBe(409);
		expect(resumed.body.code).toBe("session_file_missing");
		const command = await gw.api(`/v1/sessions/${id}/messages`);
		expect(command.status).toBe(409);
		expect(command.body.code).toBe("session_file_missing");
	});
});

/** The registry's store is SQLite in these tests; its database is the fault-injection hook. */
function sqlite(registry: SessionRegistry): SqliteStore | undefined {
	return registry.store as SqliteStore | undefined;
}
