import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { emptyTree } from "../../src/workspace/git.ts";
import { Snapshots } from "../../src/workspace/snapshots.ts";

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
