import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, expect, it } from "vitest";
import { GatewayError } from "../../src/shared/errors.ts";
import { emptyTree } from "../../src/workspace/git.ts";
import { Snapshots } from "../../src/workspace/snapshots.ts";
import { ChangeTracker } from "../../src/workspace/tracker.ts";

const root = mkdtempSync(join(tmpdir(), "pi-gateway-snapshot-remove-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function session(name: string, files: Record<string, string>) {
	const folder = join(root, name, "folder");
	mkdirSync(folder, { recursive: true });
	for (const [file, text] of Object.entries(files)) writeFileSync(join(folder, file), text);
	return { folder, repo: join(root, name, "snapshots") };
}

it("a session deleted during its snapshot: no git starts after, and nothing writes its repository again", async () => {
	const { folder, repo } = session("deleted", { "a.txt": "a" });
	const snapshots = new Snapshots(repo, folder, 10_000);
	const taking = snapshots.snapshot();
	const removed = snapshots.remove();
	// What a settle does once its snapshot is back: record the run in the manifest.
	const recorded = taking.then(() => snapshots.serial(() => snapshots.update((m) => m.runs.push({ runId: "r" }))));
	const results = await Promise.allSettled([taking, removed, recorded]);
	expect(results[1].status).toBe("fulfilled");
	expect(results[2].status).toBe("rejected");
	expect(existsSync(repo)).toBe(false);
	await expect(snapshots.snapshot()).rejects.toThrow(/gone/);
	expect(existsSync(repo)).toBe(false);
});

it("an empty folder's snapshot is git's empty tree, and makes no repository", async () => {
	const { folder, repo } = session("empty", {});
	const snapshots = new Snapshots(repo, folder, 10_000);
	expect(await snapshots.snapshot()).toBe(emptyTree);
	expect(existsSync(repo)).toBe(false);
	writeFileSync(join(folder, "b.txt"), "b");
	const tree = await snapshots.snapshot();
	expect(tree).not.toBe(emptyTree);
	expect(existsSync(join(repo, "git", "HEAD"))).toBe(true);
});

it("a GET …/changes whose session is deleted while it runs is 404 session_not_found, not a failed snapshot", async () => {
	const { folder } = session("changes-deleted", { "a.txt": "a" });
	const dataDir = join(root, "changes-deleted", "data");
	let live = true;
	const tracker = new ChangeTracker(
		{
			dataDir,
			enabled: true,
			snapshotTimeoutMs: 10_000,
			limits: { maxFiles: 50, maxDiffBytes: 4096, maxTotalBytes: 65536 },
		},
		(id) => (live && id === "ses_gone" ? { cwd: folder, emit: () => {} } : undefined),
		pino({ level: "silent" }),
	);
	await tracker.ensureBase("ses_gone");
	writeFileSync(join(folder, "b.txt"), "b");
	const reading = tracker.changes("ses_gone").catch((caught: unknown) => caught);
	// Its snapshot's first git under way, the session goes as DELETE takes it (registry, then tracker).
	await new Promise((resolve) => setImmediate(resolve));
	live = false;
	await tracker.forget("ses_gone");
	const error = (await reading) as GatewayError;
	expect(error).toBeInstanceOf(GatewayError);
	expect([error.status, error.code]).toEqual([404, "session_not_found"]);
	expect(existsSync(join(dataDir, "snapshots", "ses_gone"))).toBe(false);
});
