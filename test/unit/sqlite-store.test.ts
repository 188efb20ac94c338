import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sessions.ts";
import { storedSession } from "../helpers/stored-session.ts";

let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-store-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const record = storedSession;

describe("SqliteStore", () => {
	it("restores persistent sessions in creation order and turns ephemeral ones into tombstones", () => {
		const first = new SqliteStore(dir);
		expect(first.previousRunClean).toBe(true);
		first.save(record("b", true, "2026-01-02T00:00:00.000Z"));
		first.save(record("a", true, "2026-01-01T00:00:00.000Z"));
		first.save(record("e", false, "2026-01-03T00:00:00.000Z"));
		first.save({ ...record("gone", true, "2026-01-04T00:00:00.000Z") });
		first.remove("gone");
		first.close();

		const second = new SqliteStore(dir);
		expect(second.previousRunClean).toBe(true);
		expect(second.restore()).toEqual([
			record("a", true, "2026-01-01T00:00:00.000Z"),
			record("b", true, "2026-01-02T00:00:00.000Z"),
		]);
		expect(second.tombstone("e")).toMatchObject({ id: "e", reason: "restart" });
		expect(second.tombstone("gone")).toBeUndefined();
		expect(second.tombstone("a")).toBeUndefined();
		second.close();
	});

	it("skips an unreadable row, reports it, and restores the others", () => {
		const first = new SqliteStore(dir);
		first.restore();
		first.save(record("ok", true, "2026-01-01T00:00:00.000Z"));
		const insert = first.database.prepare("INSERT OR REPLACE INTO sessions (id, record) VALUES (?, ?)");
		insert.run("broken", "{not json");
		insert.run("wrong", JSON.stringify(record("other", true, "2026-01-01T00:00:00.000Z")));
		first.close();
		const skipped: string[] = [];
		const second = new SqliteStore(dir, { skipped: (id) => skipped.push(id) });
		expect(second.restore().map((r) => r.id)).toEqual(["ok"]);
		expect(skipped.sort()).toEqual(["broken", "wrong"]);
		second.close();
	});

	it("holds the data dir: a second store fails while the first is open", () => {
		const first = new SqliteStore(dir);
		expect(() => new SqliteStore(dir)).toThrow(`The data directory ${dir} is in use by another pi-gateway`);
		first.bury("x", "idle");
		expect(first.tombstone("x")).toMatchObject({ id: "x", reason: "idle" });
		first.close();
		new SqliteStore(dir).close();
	});

	it("notices when the previous run ended without closing (killed): the lock is free, the run unclean", () => {
		const store = new URL("../../src/store/sqlite/sessions.ts", import.meta.url).href;
		const killed = spawnSync(
			process.execPath,
			[
				"--input-type=module",
				"-e",
				`const { SqliteStore } = await import(${JSON.stringify(store)}); new SqliteStore(${JSON.stringify(dir)}); process.kill(process.pid, "SIGKILL");`,
			],
			{ encoding: "utf8" },
		);
		expect(killed.signal).toBe("SIGKILL");
		const after = new SqliteStore(dir);
		expect(after.previousRunClean).toBe(false);
		after.close();
		expect(new SqliteStore(dir).previousRunClean).toBe(true);
	});
});
