import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import type { SqliteStore } from "../../src/store/sqlite/sessions.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Issue 20, "500s": with the data disk full, a request with an Idempotency-Key and PUT …/access
// must answer a problem (507 insufficient_storage) and leave nothing half-applied: no command
// reaches pi for a key that was not stored, and a grant that was not stored is not in effect.
//
// The disk is really full: the gateway's data dir is a small tmpfs (mounted here, as root, and
// unmounted in cleanup), filled with a ballast file until the kernel answers ENOSPC. SQLite keeps
// gateway.db in WAL mode and reuses the WAL file's room, so the WAL is first checkpointed and
// truncated to zero bytes: the next transaction needs a new block of the full disk, as it does
// once a real disk fills past what the WAL already held.
const root = process.getuid?.() === 0;
let dir: string;
let data: string;
let mounted = false;
let gw: TestGateway;
let bob: string;
let ballast: string;

beforeAll(async () => {
	if (!root) return;
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-diskfull-"));
	data = join(dir, "data");
	mkdirSync(data);
	execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", data]);
	mounted = true;
	const keysFile = join(dir, "keys.json");
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ ...noPool, dataDir: data, keysFile, token: "disk-full-token-0123456789" });
	ballast = join(data, "ballast");
});
afterAll(async () => {
	await gw?.stop();
	// A process that has just let go of the tmpfs (sqlite, a snapshot's git) can keep it busy for a
	// moment on a loaded machine: retry, then detach it lazily so the folder can go.
	if (mounted) await unmount(data);
	if (dir) rmSync(dir, { recursive: true, force: true });
});

async function unmount(path: string): Promise<void> {
	for (let i = 0; i < 50; i++) {
		try {
			execFileSync("umount", [path], { stdio: "ignore" });
			return;
		} catch {
			await new Promise((r) => setTimeout(r, 100));
		}
	}
	execFileSync("umount", ["-l", path]);
}

/** Writes zeros into `path` until the file system has no block left (ENOSPC). */
function fill(path: string): void {
	const fd = openSync(path, "w");
	try {
		for (const size of [1 << 20, 1 << 16, 1 << 12, 1]) {
			const chunk = Buffer.alloc(size);
			try {
				for (;;) writeSync(fd, chunk);
			} catch (error) {
				if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
			}
		}
	} finally {
		closeSync(fd);
	}
}

function diskFull(): void {
	const db = (gw.registry.store as SqliteStore | undefined)?.database;
	if (!db) throw new Error("no gateway.db");
	db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
	fill(ballast);
}

describe.skipIf(!root)("a full data disk (tmpfs, as root)", () => {
	it("a request with an Idempotency-Key answers 507 and reaches nothing; PUT …/access answers 507 and grants nothing", async () => {
		const id = await gw.session({ name: "full" });
		diskFull();

		const prompt = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "never sent" },
			headers: { "idempotency-key": "full-1" },
		});
		expect(prompt.status, JSON.stringify(prompt.body)).toBe(507);
		expect(prompt.res.headers.get("content-type")).toContain("application/problem+json");
		expect(prompt.body.code).toBe("insufficient_storage");
		const messages = (await gw.api(`/v1/sessions/${id}/messages`)).body.messages as unknown[];
		expect(messages).toEqual([]);

		const share = await gw.api(`/v1/sessions/${id}/access`, {
			method: "PUT",
			json: { grants: [{ principal: "bob", can: ["read"] }] },
		});
		expect(share.status, JSON.stringify(share.body)).toBe(507);
		expect(share.body.code).toBe("insufficient_storage");
		expect((await gw.api(`/v1/sessions/${id}/access`)).body.grants).toEqual([]);
		const asBob = { headers: { authorization: `Bearer ${bob}` } };
		expect((await gw.api(`/v1/sessions/${id}`, asBob)).status).toBe(404);

		// Room again: both work, and the grant holds.
		unlinkSync(ballast);
		const again = await gw.api(`/v1/sessions/${id}/access`, {
			method: "PUT",
			json: { grants: [{ principal: "bob", can: ["read"] }] },
		});
		expect(again.status).toBe(200);
		expect((await gw.api(`/v1/sessions/${id}`, asBob)).status).toBe(200);
		const retried = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "sent once" },
			headers: { "idempotency-key": "full-1" },
		});
		expect(retried.status).toBe(202);
	});

	it("a create whose owner cannot be stored is 507 and leaves no session behind (it is stopped, not handed to the admin)", async () => {
		// The registry row and the owner row go to the same disk one after the other; a disk that
		// fills between the two cannot be arranged on demand, so the owner's write alone is made to
		// fail here (an SQLite trigger), as SQLite fails it on a full disk.
		const db = (gw.registry.store as SqliteStore | undefined)?.database;
		if (!db) throw new Error("no gateway.db");
		db.exec(
			"CREATE TRIGGER full_owner BEFORE INSERT ON session_access BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END",
		);
		try {
			const before = (await gw.api("/v1/sessions")).body.sessions.length as number;
			const created = await gw.api("/v1/sessions", {
				method: "POST",
				json: { name: "no owner" },
				headers: { authorization: `Bearer ${bob}` },
			});
			expect(created.status, JSON.stringify(created.body)).toBe(507);
			expect(created.body.code).toBe("insufficient_storage");
			const after = (await gw.api("/v1/sessions")).body.sessions as { name?: string }[];
			expect(after).toHaveLength(before);
			expect(after.some((s) => s.name === "no owner")).toBe(false);
		} finally {
			db.exec("DROP TRIGGER full_owner");
		}
	});
});
