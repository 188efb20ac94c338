import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, sleep, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 29, "bounded and fair": what a hostile (or just busy) agent can make the gateway keep.
// Real pi with the demo model; the default layout (no --workspace-root).
const MiB = 1024 * 1024;
const diskBytes = (path: string) => Number(execFileSync("du", ["-sb", path], { encoding: "utf8" }).split("\t")[0]);

describe("the shadow repository stays bounded", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, workspaceRoot: undefined });
	});
	afterAll(async () => {
		await gw?.stop();
	});

	it("a 20 MB file changed by every run: the versions nothing needs are pruned", async () => {
		const id = await gw.session();
		const bytes = randomBytes(20 * MiB);
		// Each run writes "x" at i * 1000: a random byte there is "x" one time in 256, and then that
		// run changed nothing (seen once in CI as a run with no changes). Not "x", every run changes it.
		for (let i = 0; i < 7; i++) bytes[i * 1000] = 0;
		const upload = await gw.fetch(`/v1/sessions/${id}/files/content?path=big.bin`, { method: "PUT", body: bytes });
		expect(upload.status).toBe(201);
		const git = join(gw.root, "data", "snapshots", id, "git");
		const runs: string[] = [];
		for (let i = 0; i < 7; i++) {
			// One byte changed in place: a new 20 MB blob for git each time.
			const message = `bash: printf x | dd of=big.bin bs=1 seek=${i * 1000} conv=notrunc status=none`;
			const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });
			expect(run.status).toBe(200);
			runs.push(run.body.runId);
			const changes = await gw.api(`/v1/sessions/${id}/changes?runId=${run.body.runId}`);
			expect(changes.status).toBe(200);
			expect(changes.body.files).toMatchObject([{ path: "big.bin", status: "modified", binary: true }]);
		}
		// Unpruned: 8 versions of 20 MB (about 160 MB). Kept: the needed trees, packed with deltas.
		expect(diskBytes(git)).toBeLessThan(80 * MiB);
		// Every kept run still diffs, and so does "since the session started".
		for (const runId of runs) {
			const changes = await gw.api(`/v1/sessions/${id}/changes?runId=${runId}`);
			expect(changes.body.files).toMatchObject([{ path: "big.bin", status: "modified" }]);
		}
		const all = await gw.api(`/v1/sessions/${id}/changes`);
		expect(all.body.files).toMatchObject([{ path: "big.bin", status: "added" }]);
	}, 240_000);
});

describe("a session's snapshots stop at --workspace-max-snapshot-bytes", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, workspaceRoot: undefined, workspaceMaxSnapshotBytes: 8 * MiB });
	});
	afterAll(async () => {
		await gw?.stop();
	});

	it("refuses a snapshot past the cap before storing it; run_changes and GET …/changes say why; room again resumes them", async () => {
		const id = await gw.session();
		const prompt = (message: string) =>
			gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });
		const git = join(gw.root, "data", "snapshots", id, "git");
		expect((await prompt("bash: head -c 20000000 /dev/urandom > big.bin")).status).toBe(200);
		const refused = await prompt("bash: echo hi > small.txt");
		expect(refused.status).toBe(200);
		const events = await gw.fetch(`/v1/sessions/${id}/events?after=0`);
		const frames = await collect(events, (f) => f.event === "run_changes" && f.json.runId === refused.body.runId);
		const summary = frames.at(-1)?.json;
		expect(summary).toMatchObject({ type: "run_changes", runId: refused.body.runId, files: null });
		expect(summary.error).toContain("--workspace-max-snapshot-bytes");
		const byRun = await gw.api(`/v1/sessions/${id}/changes?runId=${refused.body.runId}`);
		expect(byRun.status).toBe(507);
		expect(byRun.body.code).toBe("snapshot_limit");
		const sinceStart = await gw.api(`/v1/sessions/${id}/changes`);
		expect(sinceStart.status).toBe(507);
		expect(sinceStart.body.code).toBe("snapshot_limit");
		expect(sinceStart.body.detail).toContain("--workspace-max-snapshot-bytes");
		// Not a byte of the 20 MB went into the shadow repository.
		expect(diskBytes(git)).toBeLessThan(4 * MiB);
		// The file gone, the folder fits again.
		expect((await gw.fetch(`/v1/sessions/${id}/files/content?path=big.bin`, { method: "DELETE" })).status).toBe(204);
		const again = await prompt("bash: echo again > small.txt");
		const changes = await gw.api(`/v1/sessions/${id}/changes?runId=${again.body.runId}`);
		expect(changes.status).toBe(200);
		expect(changes.body.files).toMatchObject([{ path: "small.txt", status: "modified" }]);
	}, 60_000);
});

describe("DELETE keeps the session's folder; --workspace-retention-days removes the gateway's own ones later", () => {
	let gw: TestGateway;
	// Two seconds: the sweep runs every second.
	const retention = 2 / 86_400;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, workspaceRoot: undefined, workspaceRetentionDays: retention });
	});
	afterAll(async () => {
		await gw?.stop();
	});
	const folderOf = (id: string) => join(gw.config.workspaceRoot, id);
	const withFile = async (body: Record<string, unknown> = {}) => {
		const id = await gw.session(body);
		const put = await gw.fetch(`/v1/sessions/${id}/files/content?path=keep.txt`, { method: "PUT", body: "mine\n" });
		expect(put.status).toBe(201);
		return id;
	};
	const del = (id: string, query = "") => gw.api(`/v1/sessions/${id}${query}`, { method: "DELETE" });

	it("keeps the folder on DELETE, removes it at once with ?purge=true, and never removes a named cwd", async () => {
		const kept = await withFile();
		expect((await del(kept)).status).toBe(204);
		expect(readFileSync(join(folderOf(kept), "keep.txt"), "utf8")).toBe("mine\n");
		const purged = await withFile();
		expect((await del(purged, "?purge=true")).status).toBe(204);
		expect(existsSync(folderOf(purged))).toBe(false);
		mkdirSync(join(gw.config.workspaceRoot, "named"));
		const named = await withFile({ cwd: "named" });
		expect((await del(named, "?purge=true")).status).toBe(204);
		expect(readFileSync(join(gw.config.workspaceRoot, "named", "keep.txt"), "utf8")).toBe("mine\n");
		expect((await del(await gw.session(), "?purge=maybe")).status).toBe(400);
	});

	it("removes a folder the agent nested past the system's path limit (Node's rm stops there)", async () => {
		const id = await gw.session();
		// 25 folders of 200 bytes, made one relative step at a time, as the agent can.
		const deep = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: {
				message: `bash: n=$(printf 'd%.0s' $(seq 200)); for i in $(seq 25); do mkdir $n && cd $n; done; echo x > f`,
			},
		});
		expect(deep.status).toBe(200);
		let depth = 0;
		for (let dir = folderOf(id); existsSync(join(dir, "d".repeat(200))); dir = join(dir, "d".repeat(200))) {
			depth++;
			if (dir.length > 3000) break;
		}
		expect(depth).toBeGreaterThan(10);
		expect((await del(id, "?purge=true")).status).toBe(204);
		expect(existsSync(folderOf(id))).toBe(false);
	});

	it("removes a deleted session's own folder after the retention period, unless a session works in it", async () => {
		const gone = await withFile();
		const shared = await withFile();
		// Another session named the first one's folder as its cwd: it is the user's now.
		const user = await gw.session({ cwd: shared });
		expect((await del(gone)).status).toBe(204);
		expect((await del(shared)).status).toBe(204);
		expect(existsSync(folderOf(gone))).toBe(true);
		await until(() => !existsSync(folderOf(gone)), 10_000);
		expect(existsSync(join(folderOf(shared), "keep.txt"))).toBe(true);
		// Deleting the session that named it keeps it for good.
		expect((await del(user)).status).toBe(204);
		await sleep(3000);
		expect(existsSync(join(folderOf(shared), "keep.txt"))).toBe(true);
	});
});

describe("the retention sweep at start", () => {
	it("removes folders whose retention ran out while the gateway was stopped", async () => {
		const first = await startTestGateway({ ...noPool, workspaceRoot: undefined });
		const dataDir = join(first.root, "data");
		const id = await first.session();
		const folder = join(first.config.workspaceRoot, id);
		expect((await first.api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
		await first.close();
		expect(existsSync(folder)).toBe(true);
		const list = join(dataDir, "retained-folders.json");
		const kept = JSON.parse(readFileSync(list, "utf8")) as { path: string; deletedAt: string }[];
		expect(kept).toMatchObject([{ id, path: folder }]);
		const longAgo = new Date(Date.now() - 31 * 86_400_000).toISOString();
		writeFileSync(list, JSON.stringify(kept.map((k) => ({ ...k, deletedAt: longAgo }))));
		const second = await startTestGateway({ ...noPool, workspaceRoot: undefined, dataDir });
		try {
			await until(() => !existsSync(folder), 10_000);
		} finally {
			await second.stop();
			rmSync(first.root, { recursive: true, force: true });
		}
	});
});

describe("images per command are bounded (64)", () => {
	let gw: TestGateway;
	let id: string;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, workspaceRoot: undefined });
		id = await gw.session();
	});
	afterAll(async () => {
		await gw?.stop();
	});
	const images = (n: number) =>
		Array.from({ length: n }, () => ({ type: "image", data: "AAAA", mimeType: "image/png" }));

	it("refuses a prompt with more than 64 images (400), typed route or raw /rpc, before pi sees it", async () => {
		const typed = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "look", images: images(65) },
		});
		expect(typed.status).toBe(400);
		expect(typed.body.code).toBe("invalid_input");
		expect(JSON.stringify(typed.body)).toContain("64");
		const started = Date.now();
		const raw = await gw.api(`/v1/sessions/${id}/rpc`, {
			method: "POST",
			json: { type: "prompt", message: "look", images: images(20_000) },
		});
		expect(raw.status).toBe(400);
		expect(Date.now() - started).toBeLessThan(5000);
		// A command type this gateway does not know, with images: the guard counts them too.
		const unknown = await gw.api(`/v1/sessions/${id}/rpc`, {
			method: "POST",
			json: { type: "future_command", images: images(65) },
		});
		expect(unknown.status).toBe(400);
		expect(unknown.body.code).toBe("too_many_images");
		// pi is fine: the next prompt runs.
		const ok = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "hello" } });
		expect(ok.status).toBe(200);
	}, 60_000);
});
