import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type ClusterNode, startNode } from "../helpers/cluster.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { collect, type Frame } from "../helpers/sse.ts";

// Several gateway processes with real pi (demo model) and waits on leases.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

// Failover the way docs/cluster.md tells operators to run a cluster: each node has its own
// --data-dir and nothing else (no shared --workspace-root), so a session's folder lives under
// its owner's data dir and must follow the session through PostgreSQL. One test keeps a shared root.
const token = "cluster-folders-token";
const leaseTtlMs = 5000;
let server: TestPostgres;
let root: string;
const nodes: ClusterNode[] = [];

beforeAll(async () => {
	server = await startTestPostgres();
});
afterEach(async () => {
	await Promise.all(nodes.splice(0).map((n) => n.stop()));
	if (root) rmSync(root, { recursive: true, force: true });
});
afterAll(async () => {
	await server?.stop();
});

async function cluster(names: string[], options: { shared?: boolean; extra?: string[] } = {}) {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-folders-"));
	const databaseUrl = await server.freshDatabase();
	const started: ClusterNode[] = [];
	for (const name of names) {
		const node = await startNode({
			name,
			databaseUrl,
			root,
			token,
			leaseTtlMs,
			sharedWorkspace: options.shared ?? false,
			extra: options.extra,
		});
		nodes.push(node);
		started.push(node);
	}
	return started as [ClusterNode, ClusterNode, ClusterNode];
}

const prompt = (node: ClusterNode, id: string, message: string) =>
	node.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message } });

const userTexts = async (node: ClusterNode, id: string) => {
	const { body } = await node.api(`/v1/sessions/${id}/messages`);
	return (body.messages as { role: string; content: unknown }[])
		.filter((m) => m.role === "user")
		.map((m) => JSON.stringify(m.content));
};

const readFile = async (node: ClusterNode, id: string, path: string) => {
	const res = await node.fetch(`/v1/sessions/${id}/files/content?path=${encodeURIComponent(path)}`);
	return { status: res.status, text: await res.text() };
};

/** A session created on `owner` with a settled run (through `via`) that wrote out/made.txt. */
async function sessionWithFile(owner: ClusterNode, via: ClusterNode): Promise<string> {
	const created = await owner.api("/v1/sessions", { method: "POST", json: {} });
	expect(created.status).toBe(201);
	const id = created.body.id as string;
	const run = await prompt(via, id, "bash: mkdir -p out && printf 'made on the first node\\n' > out/made.txt");
	expect(run.status).toBe(200);
	return id;
}

describe("default layout (a data dir per node, nothing shared but PostgreSQL): the folder follows its session", () => {
	it("kill -9 of the owner: a survivor serves the conversation and the file a settled run wrote, and a new prompt works", async () => {
		const [a, b, c] = await cluster(["a", "b", "c"]);
		const id = await sessionWithFile(a, b);
		const before = (await a.api(`/v1/sessions/${id}`)).body;
		expect(before.cwd.startsWith(a.dataDir)).toBe(true);

		// An upload is a change of the folder too: stored before its 201.
		const put = await c.fetch(`/v1/sessions/${id}/files/content?path=uploaded.txt`, {
			method: "PUT",
			body: "uploaded",
		});
		expect(put.status).toBe(201);

		const killedAt = Date.now();
		a.signal("SIGKILL");
		await a.exited;
		nodes.splice(nodes.indexOf(a), 1);
		const after = await prompt(b, id, "echo: after the crash");
		expect(after.status, JSON.stringify(after.body)).toBe(200);
		expect(after.body.text).toBe("after the crash");
		console.log(`failover (default layout): kill -9 → a prompt answered through B in ${Date.now() - killedAt} ms`);

		expect(await readFile(c, id, "out/made.txt")).toEqual({ status: 200, text: "made on the first node\n" });
		expect(await readFile(c, id, "uploaded.txt")).toEqual({ status: 200, text: "uploaded" });
		expect(await userTexts(c, id)).toEqual([
			expect.stringContaining("made on the first node"),
			expect.stringContaining("after the crash"),
		]);
		const view = (await c.api(`/v1/sessions/${id}`)).body;
		// Its folder is now under the data dir of the node that took it over, at the same place in it.
		const survivor = [b, c].find((n) => n.name === view.node) as ClusterNode;
		expect(view.cwd).toBe(before.cwd.replace(a.dataDir, survivor.dataDir));
		expect(view.folderRestore).toMatchObject({ complete: true, missing: [] });
	});

	it("SIGTERM of the owner (a rolling restart): the session resumes on a survivor with its conversation and files", async () => {
		const [a, b, c] = await cluster(["a", "b", "c"]);
		const id = await sessionWithFile(a, b);
		await a.stop();
		nodes.splice(nodes.indexOf(a), 1);
		const after = await prompt(c, id, "bash: cat out/made.txt");
		expect(after.status, JSON.stringify(after.body)).toBe(200);
		expect(after.body.text).toContain("made on the first node");
		expect(await readFile(b, id, "out/made.txt")).toEqual({ status: 200, text: "made on the first node\n" });
		expect(await userTexts(b, id)).toHaveLength(2);
	});
});

describe("a folder past --workspace-sync-max-bytes", () => {
	it("the owner says what it leaves out (event, metric); the survivor names what is missing, and the session works on", async () => {
		const [a, b] = await cluster(["a", "b"], { extra: ["--workspace-sync-max-bytes=1048576"] });
		const created = await a.api("/v1/sessions", { method: "POST", json: {} });
		const id = created.body.id as string;
		const run = await prompt(a, id, "bash: head -c 2000000 /dev/zero > big.bin && printf small > small.txt");
		expect(run.status).toBe(200);
		const frames = await collect(await a.fetch(`/v1/sessions/${id}/events?after=0`), (f) => f.event === "folder_sync");
		expect(frames.at(-1)?.json).toMatchObject({
			type: "folder_sync",
			code: "folder_too_large",
			maxBytes: 1048576,
			omitted: 1,
			paths: ["big.bin"],
		});
		const metrics = await (await a.fetch("/metrics")).text();
		expect(metrics).toMatch(/^pi_gateway_folder_sync_over_cap_total [1-9]/m);
		expect(metrics).toMatch(/^pi_gateway_folder_syncs_total\{outcome="stored"\} [1-9]/m);

		a.signal("SIGKILL");
		await a.exited;
		nodes.splice(nodes.indexOf(a), 1);
		const after = await prompt(b, id, "echo: still here");
		expect(after.status, JSON.stringify(after.body)).toBe(200);
		const view = (await b.api(`/v1/sessions/${id}`)).body;
		expect(view.folderRestore).toMatchObject({ complete: false, from: "a", missing: ["big.bin"], missingCount: 1 });
		// From the start of this node's log (a stream that meets a session_exit ends there: go on past it).
		let told: Frame[] = [];
		for (let after = 0, i = 0; i < 3 && !told.some((f) => f.event === "folder_restore"); i++) {
			const frames = await collect(
				await b.fetch(`/v1/sessions/${id}/events?after=${after}`),
				(f) => f.event === "folder_restore",
			);
			told = [...told, ...frames];
			after = Number(frames.filter((f) => f.id).at(-1)?.id ?? after);
		}
		expect(told.find((f) => f.event === "folder_restore")?.json).toMatchObject({
			type: "folder_restore",
			complete: false,
			missing: ["big.bin"],
		});
		expect(await readFile(b, id, "small.txt")).toEqual({ status: 200, text: "small" });
		expect((await readFile(b, id, "big.bin")).status).toBe(404);
		expect(await (await b.fetch("/metrics")).text()).toMatch(
			/^pi_gateway_folder_restores_total\{outcome="incomplete"\} 1/m,
		);
	});
});

describe("a shared --workspace-root (an operator's shared folder)", () => {
	it("kill -9 of the owner: the survivor works in the same folder, nothing restored", async () => {
		const [a, b] = await cluster(["a", "b"], { shared: true });
		const id = await sessionWithFile(a, b);
		const before = (await a.api(`/v1/sessions/${id}`)).body;
		a.signal("SIGKILL");
		await a.exited;
		nodes.splice(nodes.indexOf(a), 1);
		expect((await prompt(b, id, "echo: after")).status).toBe(200);
		const view = (await b.api(`/v1/sessions/${id}`)).body;
		expect(view.cwd).toBe(before.cwd);
		expect(view.folderRestore).toBeNull();
		expect(await readFile(b, id, "out/made.txt")).toEqual({ status: 200, text: "made on the first node\n" });
	});
});
