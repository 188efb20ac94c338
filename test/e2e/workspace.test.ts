import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { collect } from "../helpers/sse.ts";

// Real pi with the demo model: `bash: CMD` makes the changes a run is asked about.
let gw: TestGateway;
let id: string;
/** The session's folder. */
let folder: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const files = (rest = "") => `/v1/sessions/${id}/files${rest}`;
const content = (path: string) => files(`/content?path=${encodeURIComponent(path)}`);
const put = (path: string, body: RequestInit["body"], headers: Record<string, string> = {}) =>
	gw.fetch(content(path), { method: "PUT", body, headers, duplex: "half" } as RequestInit);

beforeAll(async () => {
	receiver = await startReceiver();
	// A JSON body limit far below the upload limit: uploads are bounded on their own.
	gw = await startTestGateway({
		...noPool,
		webhookAllow: ["loopback"],
		maxBodyBytes: 64 * 1024,
		workspaceMaxUploadBytes: 1024 * 1024,
	});
	const hook = await gw.api("/v1/webhooks", { method: "POST", json: { url: receiver.url, events: ["run.settled"] } });
	expect(hook.status).toBe(201);
	// A folder the admin prepares in its area (README's layout: the whole root) before the session
	// starts in it: what changed "since the session started" is measured against these files.
	folder = join(gw.workspace, "project");
	mkdirSync(folder);
	writeFileSync(join(folder, "kept.txt"), "one\n");
	writeFileSync(join(folder, "gone.txt"), "bye\n");
	id = await gw.session({ cwd: "project" });
	expect(await gw.folder(id)).toBe(folder);
});
afterAll(async () => {
	await gw?.stop();
	await receiver?.close();
});

describe("workspace files", () => {
	it("uploads (201 new, 204 replaced) with ETags, If-Match and If-None-Match", async () => {
		const created = await put("notes/todo.txt", "first\n");
		expect(created.status).toBe(201);
		expect(created.headers.get("location")).toBe(content("notes/todo.txt"));
		const etag = created.headers.get("etag") as string;
		expect(etag).toMatch(/^".+"$/);
		expect(readFileSync(join(folder, "notes", "todo.txt"), "utf8")).toBe("first\n");
		const stale = await put("notes/todo.txt", "lost\n", { "if-match": '"nope"' });
		expect(stale.status).toBe(412);
		expect(stale.headers.get("content-type")).toContain("application/problem+json");
		expect(((await stale.json()) as { code: string }).code).toBe("precondition_failed");
		expect((await put("notes/todo.txt", "x", { "if-none-match": "*" })).status).toBe(412);
		const replaced = await put("notes/todo.txt", "second\n", { "if-match": etag });
		expect(replaced.status).toBe(204);
		expect(replaced.headers.get("etag")).not.toBe(etag);
		expect(readFileSync(join(folder, "notes", "todo.txt"), "utf8")).toBe("second\n");
	});

	it("takes an upload larger than the JSON body limit, and refuses one over its own limit (413)", async () => {
		expect((await put("big.bin", new Uint8Array(512 * 1024))).status).toBe(201);
		const over = await put("over.bin", new Uint8Array(1024 * 1024 + 1));
		expect(over.status).toBe(413);
		// Its body was not read: the connection is not reused for the next request.
		expect(over.headers.get("connection")).toBe("close");
		// Streamed without a length: counted while it is written, and the partial file removed.
		const chunks = new ReadableStream({
			start(controller) {
				for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(64 * 1024));
				controller.close();
			},
		});
		expect((await put("streamed.bin", chunks)).status).toBe(413);
		const listed = await gw.api(files());
		expect(listed.body.entries.map((e: { name: string }) => e.name)).not.toContain("streamed.bin");
	});

	it("reads a file with its content type and ETag, a range (206), a bad range (416), If-None-Match (304)", async () => {
		const res = await gw.fetch(content("notes/todo.txt"));
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
		expect(res.headers.get("content-security-policy")).toContain("sandbox");
		expect(await res.text()).toBe("second\n");
		const etag = res.headers.get("etag") as string;
		const part = await gw.fetch(content("notes/todo.txt"), { headers: { range: "bytes=1-3" } });
		expect(part.status).toBe(206);
		expect(part.headers.get("content-range")).toBe("bytes 1-3/7");
		expect(await part.text()).toBe("eco");
		const past = await gw.fetch(content("notes/todo.txt"), { headers: { range: "bytes=100-" } });
		expect(past.status).toBe(416);
		expect(past.headers.get("content-range")).toBe("bytes */7");
		expect(((await past.json()) as { code: string }).code).toBe("range_not_satisfiable");
		expect((await gw.fetch(content("notes/todo.txt"), { headers: { "if-none-match": etag } })).status).toBe(304);
		const missing = await gw.api(content("notes/none.txt"));
		expect(missing.status).toBe(404);
		expect(missing.body.code).toBe("path_not_found");
		expect((await gw.api(content("notes"))).body.code).toBe("not_a_file");
	});

	it("lists a folder sorted by name, in pages", async () => {
		const root = await gw.api(files());
		expect(root.status).toBe(200);
		expect(root.body.path).toBe("");
		const names = root.body.entries.map((e: { name: string }) => e.name);
		expect(names).toEqual([...names].sort());
		expect(root.body.entries.find((e: { name: string }) => e.name === "notes")).toMatchObject({
			type: "dir",
			path: "notes",
		});
		const first = await gw.api(files("?limit=1"));
		expect(first.body.entries).toHaveLength(1);
		expect(first.body.nextCursor).toBe("1");
		const second = await gw.api(files(`?limit=1&cursor=${first.body.nextCursor}`));
		expect(second.body.entries[0].name).toBe(names[1]);
		const sub = await gw.api(files("?path=notes"));
		expect(sub.body.entries).toMatchObject([{ name: "todo.txt", path: "notes/todo.txt", type: "file", size: 7 }]);
		expect((await gw.api(files("?path=notes/todo.txt"))).body.code).toBe("not_a_folder");
	});

	it("searches names and text with ripgrep, capped, filtered by a glob", async () => {
		mkdirSync(join(folder, "src"), { recursive: true });
		writeFileSync(join(folder, "src", "needle.py"), "a = 1\nfind_the_needle()\n");
		writeFileSync(join(folder, "src", "other.ts"), "// needle here too\n");
		const res = await gw.api(files("/search?q=needle"));
		expect(res.status).toBe(200);
		expect(res.body.engine).toBe("ripgrep");
		expect(res.body.matches).toContainEqual({ path: "src/needle.py", line: null, text: null });
		expect(res.body.matches).toContainEqual({ path: "src/needle.py", line: 2, text: "find_the_needle()" });
		expect(res.body.matches).toContainEqual({ path: "src/other.ts", line: 1, text: "// needle here too" });
		const py = await gw.api(files("/search?q=needle&glob=*.py"));
		expect(py.body.matches.every((m: { path: string }) => m.path.endsWith(".py"))).toBe(true);
		// A query that looks like an option is text to find, never an option of rg.
		writeFileSync(join(folder, "src", "flags.txt"), "--files\n");
		const flag = await gw.api(files(`/search?q=${encodeURIComponent("--files")}`));
		expect(flag.body.matches).toEqual([{ path: "src/flags.txt", line: 1, text: "--files" }]);
	});

	it("lists and searches a file whose name is not UTF-8, shown with U+FFFD as in what changed", async () => {
		const bytes = Buffer.concat([Buffer.from(`${folder}/odd`), Buffer.from([0xff]), Buffer.from("name.txt")]);
		try {
			writeFileSync(bytes, "needle_9d4\n");
			const listed = await gw.api(files());
			expect(listed.body.entries.map((e: { name: string }) => e.name)).toContain("odd\ufffdname.txt");
			const found = await gw.api(files("/search?q=needle_9d4"));
			expect(found.body.matches).toEqual([{ path: "odd\ufffdname.txt", line: 1, text: "needle_9d4" }]);
		} finally {
			rmSync(bytes, { force: true });
		}
	});

	it("takes no ignore file from the folder: .gitignore, rg's .ignore/.rgignore and git's exclude hide nothing", async () => {
		// An attacker's review hid files from search with an .ignore it planted: the files an agent
		// writes are never a tool's configuration. node_modules is skipped (as the built-in search does).
		const planted = { ".ignore": "s1/\n", ".rgignore": "s2/\n", ".gitignore": "s4/\n" };
		try {
			for (const dir of ["s1", "s2", "s3", "s4", "node_modules"]) {
				mkdirSync(join(folder, dir), { recursive: true });
				writeFileSync(join(folder, dir, "hay.txt"), "pin_7c1e\n");
			}
			for (const [name, text] of Object.entries(planted)) writeFileSync(join(folder, name), text);
			mkdirSync(join(folder, ".git", "info"), { recursive: true });
			writeFileSync(join(folder, ".git", "info", "exclude"), "s3/\n");
			const res = await gw.api(files("/search?q=pin_7c1e"));
			expect(res.body.matches.map((m: { path: string }) => m.path).sort()).toEqual([
				"s1/hay.txt",
				"s2/hay.txt",
				"s3/hay.txt",
				"s4/hay.txt",
			]);
		} finally {
			for (const name of [...Object.keys(planted), ".git", "s1", "s2", "s3", "s4", "node_modules"])
				rmSync(join(folder, name), { recursive: true, force: true });
		}
	});

	it("deletes a file (204), then it is gone (404)", async () => {
		expect((await gw.fetch(content("big.bin"), { method: "DELETE" })).status).toBe(204);
		expect((await gw.api(content("big.bin"), { method: "DELETE" })).status).toBe(404);
		expect((await gw.api(content("notes"), { method: "DELETE" })).body.code).toBe("not_a_file");
	});

	it("sends the folder as a streamed tar.gz", async () => {
		const res = await gw.fetch(`/v1/sessions/${id}/archive`);
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toBe("application/gzip");
		const tar = gunzipSync(Buffer.from(await res.arrayBuffer()));
		const entries = new Map<string, string>();
		for (let at = 0; at + 512 <= tar.length; ) {
			const name = tar
				.subarray(at, at + 100)
				.toString("utf8")
				.replace(/\0.*$/s, "");
			if (!name) break;
			const size = Number.parseInt(tar.subarray(at + 124, at + 136).toString("ascii"), 8);
			entries.set(name, tar.subarray(at + 512, at + 512 + size).toString("utf8"));
			at += 512 + Math.ceil(size / 512) * 512;
		}
		expect(entries.get("notes/todo.txt")).toBe("second\n");
		expect(entries.has("notes/")).toBe(true);
		expect(entries.get("kept.txt")).toBe("one\n");
	});
});

describe("workspace changes", () => {
	let runId: string;

	it("says what one run changed: added, modified, deleted with unified diffs, binaries flagged", async () => {
		const after = (await gw.api(`/v1/sessions/${id}`)).body;
		const command =
			"printf 'two\\n' >> kept.txt && rm gone.txt && printf 'new\\n' > made.txt && printf 'a\\0b' > blob.bin";
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: `bash: ${command}` },
		});
		expect(run.status).toBe(200);
		runId = run.body.runId;
		const res = await gw.api(`/v1/sessions/${id}/changes?runId=${runId}`);
		expect(res.status).toBe(200);
		const byPath = new Map(res.body.files.map((f: { path: string }) => [f.path, f]));
		expect(byPath.get("made.txt")).toMatchObject({ status: "added", binary: false, truncated: false });
		expect((byPath.get("made.txt") as { diff: string }).diff).toContain("+new");
		expect(byPath.get("kept.txt")).toMatchObject({ status: "modified" });
		expect((byPath.get("kept.txt") as { diff: string }).diff).toMatch(/ one\n\+two/);
		expect(byPath.get("gone.txt")).toMatchObject({ status: "deleted" });
		expect(byPath.get("blob.bin")).toMatchObject({ status: "added", binary: true, diff: null });
		// Only the run's own changes: the uploads before it are not among them.
		expect(byPath.has("notes/todo.txt")).toBe(false);
		expect(after.id).toBe(id);
	});

	it("says what changed since the session started: the run's changes and the uploads", async () => {
		const res = await gw.api(`/v1/sessions/${id}/changes`);
		expect(res.status).toBe(200);
		expect(res.body.runId).toBeNull();
		const paths = res.body.files.map((f: { path: string }) => f.path);
		expect(paths).toEqual(expect.arrayContaining(["made.txt", "kept.txt", "gone.txt", "notes/todo.txt"]));
		expect((await gw.api(`/v1/sessions/${id}/changes?runId=gw_nope`)).body.code).toBe("run_not_found");
	});

	it("announces the run's changed paths on the session's stream and in its run.settled webhook", async () => {
		const res = await gw.fetch(`/v1/sessions/${id}/events?after=0`);
		const frames = await collect(res, (f) => f.event === "run_changes");
		const event = frames.at(-1)?.json;
		expect(event).toMatchObject({ type: "run_changes", sessionId: id, runId, truncated: false });
		expect(event.files).toEqual(
			expect.arrayContaining([
				{ path: "made.txt", status: "added" },
				{ path: "gone.txt", status: "deleted" },
			]),
		);
		const settled = await until(() => receiver.of("run.settled").find((r) => r.json.data.runId === runId), 10_000);
		expect(settled.json.data.changes.files).toEqual(expect.arrayContaining([{ path: "kept.txt", status: "modified" }]));
		expect(settled.json.data.links.changes).toBe(`/v1/sessions/${id}/changes?runId=${runId}`);
	});

	it("never writes into the session's folder: the snapshots live under the data dir", async () => {
		const listed = await gw.api(files());
		expect(listed.body.entries.map((e: { name: string }) => e.name)).not.toContain(".git");
		expect(readFileSync(join(gw.root, "data", "snapshots", id, "runs.json"), "utf8")).toContain(runId);
	});

	it("a deleted session's snapshots go with it", async () => {
		expect((await gw.api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
		expect(existsSync(join(gw.root, "data", "snapshots", id))).toBe(false);
	});
});
