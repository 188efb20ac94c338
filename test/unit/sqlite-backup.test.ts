import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { copyWhileHeld } from "../../src/store/sqlite/backup.ts";
import { SqliteStore } from "../../src/store/sqlite/sessions.ts";
import { storedSession } from "../helpers/stored-session.ts";

/**
 * `pi-gateway backup` copies the data dir through src/store/sqlite/backup.ts: never while a gateway
 * holds gateway.db, no gateway starting on it mid-copy, and gateway.db alone holding what a killed
 * gateway wrote last.
 */
let dir: string;
beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-backup-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("copyWhileHeld", () => {
	it("copies nothing while a gateway holds gateway.db", () => {
		const running = new SqliteStore(dir);
		let copied = false;
		try {
			expect(copyWhileHeld(dir, () => (copied = true))).toBe("in use");
		} finally {
			running.close();
		}
		expect(copied).toBe(false);
	});

	it("keeps a gateway from starting on the folder until the copy is done", () => {
		new SqliteStore(dir).close();
		const result = copyWhileHeld(dir, () => {
			expect(() => new SqliteStore(dir)).toThrow(/is in use by another pi-gateway/);
		});
		expect(result).toBe("copied");
		new SqliteStore(dir).close();
	});

	it("folds a killed gateway's last writes into gateway.db before copying", () => {
		const store = resolve(import.meta.dirname, "../../src/store/sqlite/sessions.ts");
		const record = storedSession("kept", true, "2026-01-01T00:00:00.000Z");
		const killed = spawnSync(
			process.execPath,
			[
				"--input-type=module",
				"-e",
				`const { SqliteStore } = await import(${JSON.stringify(store)}); new SqliteStore(${JSON.stringify(dir)}).save(${JSON.stringify(record)}); process.kill(process.pid, "SIGKILL");`,
			],
			{ encoding: "utf8" },
		);
		expect(killed.signal).toBe("SIGKILL");
		const copy = join(dir, "copy");
		copyWhileHeld(dir, () => {
			mkdirSync(copy);
			copyFileSync(join(dir, "gateway.db"), join(copy, "gateway.db"));
		});
		const restored = new SqliteStore(copy);
		expect(restored.restore()).toEqual([record]);
		restored.close();
	});
});
