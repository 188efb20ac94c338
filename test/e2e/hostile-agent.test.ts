import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
	existsSync,
	lstatSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	rmSync,
	writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { createGunzip } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../src/app/server.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";

// Issue 29, item 6: the hostile-agent battery. A gateway started as README starts it (no
// --workspace-root, keys made with the CLI, real pi with its demo model, the sandbox on as root),
// one agent (alice) that plants every hostile file it can think of in every folder it can write
// (test/fixtures/hostile-plant.sh: git configs, attributes, hooks, fsmonitor, ignore files, repos
// of its own, links to every secret and to /, FIFOs, a sparse 50 GB file, a 1 MB line, 100,000
// files, names with newlines and leading dashes), then every route that reads a workspace runs on
// it — before and after a gateway restart — and nothing of the host may move: no payload runs
// (markers), no secret reaches an answer or a file the agent can read, no host file changes, the
// gateway answers throughout and its shadow repositories stay bounded.
const repo = resolve(import.meta.dirname, "../..");
const plantScript = join(repo, "test/fixtures/hostile-plant.sh");
const run = promisify(execFile);

let gw: TestGateway;
/** The gateway answering now (the first one, then the one started after the restart). */
let current: Gateway;
let keysDir: string;
let keysFile: string;
let markDir: string;
let dataDir: string;
const key: Record<string, string> = {};
type Name = "A" | "B" | "C" | "D";
const ids: Record<Name | "Bo", string> = { A: "", B: "", C: "", D: "", Bo: "" };
const folder: Record<string, string> = {};
const runs: Record<Name, string[]> = { A: [], B: [], C: [], D: [] };

/** Every secret the agent must never see, by name. */
const canaries = new Map<string, Buffer>();
const canaryHits: string[] = [];
/** Every HTTP exchange: what was asked, the answer's status (0: none), how long it took. */
const exchanges: {
	round: string;
	label: string;
	status: number;
	ms: number;
	error?: string;
	detail?: string;
	note?: string;
}[] = [];
const healthFailures: string[] = [];
let round = "setup";
/** Host files the agent must not change, hashed before anything is planted. */
let hostBefore: Record<string, string> = {};

const bobCanary = `BOB-CANARY-${randomBytes(12).toString("hex")}`;
const decoyCanary = `DECOY-SECRET-${randomBytes(12).toString("hex")}`;
const hostFileCanary = `HOST-FILE-${randomBytes(12).toString("hex")}`;
const maxCanary = () => Math.max(...[...canaries.values()].map((c) => c.length));

/** Finds canaries across chunk boundaries. */
class Scanner {
	#tail = Buffer.alloc(0);
	readonly #label: string;
	constructor(label: string) {
		this.#label = label;
	}
	feed(chunk: Buffer) {
		const data = Buffer.concat([this.#tail, chunk]);
		for (const [name, canary] of canaries)
			if (data.includes(canary)) {
				const hit = `${round}: ${this.#label} carries ${name}`;
				if (!canaryHits.includes(hit)) canaryHits.push(hit);
			}
		this.#tail = data.subarray(Math.max(0, data.length - maxCanary() + 1));
	}
}

interface CallOptions {
	method?: string;
	json?: unknown;
	headers?: Record<string, string>;
	/** Read (and keep) at most this many bytes of the body, then cancel the rest. */
	maxBytes?: number;
	/** The body is gzip: scan it decompressed, to its end. */
	gunzip?: boolean;
	timeoutMs?: number;
}

interface Answer {
	status: number;
	body: Buffer;
	json: any;
	/** Bytes read (decompressed for gzip). */
	size: number;
}

/** One HTTP exchange as `who` (a principal, or "admin" for the token), recorded and scanned. */
async function call(who: string, label: string, path: string, options: CallOptions = {}): Promise<Answer> {
	const headers = new Headers(options.headers);
	headers.set("authorization", `Bearer ${who === "admin" ? current.config.token : key[who]}`);
	let body: string | undefined;
	if (options.json !== undefined) {
		headers.set("content-type", "application/json");
		body = JSON.stringify(options.json);
	}
	const started = Date.now();
	const timeoutMs = options.timeoutMs ?? 60_000;
	const keep = options.maxBytes ?? 8 * 1024 * 1024;
	const kept: Buffer[] = [];
	let keptBytes = 0;
	let size = 0;
	let status = 0;
	let error: string | undefined;
	const scanner = new Scanner(label);
	try {
		const res = await fetch(current.url + path, {
			method: options.method ?? "GET",
			headers,
			body,
			signal: AbortSignal.timeout(timeoutMs),
		});
		status = res.status;
		const headerText = [...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
		scanner.feed(Buffer.from(headerText));
		if (res.body) {
			const raw = Readable.fromWeb(res.body as never);
			const stream = options.gunzip && status === 200 ? raw.pipe(createGunzip()) : raw;
			for await (const chunk of stream as AsyncIterable<Buffer>) {
				scanner.feed(chunk);
				size += chunk.length;
				if (keptBytes < keep) {
					kept.push(chunk.subarray(0, keep - keptBytes));
					keptBytes += Math.min(chunk.length, keep - keptBytes);
				}
				if (options.maxBytes !== undefined && size >= options.maxBytes) {
					raw.destroy();
					break;
				}
			}
		}
	} catch (caught) {
		error = String(caught).slice(0, 200);
	}
	const buffer = Buffer.concat(kept);
	let json: any;
	try {
		json = JSON.parse(buffer.toString("utf8"));
	} catch {}
	// A 5xx says why (problem+json detail), so that a failure names its cause.
	const detail = status >= 500 ? String(json?.detail ?? buffer.toString("utf8")).slice(0, 400) : undefined;
	// A search says what it found (HOSTILE_LOG=file keeps every exchange for a look afterwards).
	const note = json?.engine ? `${json.matches?.length} matches, truncated: ${json.truncated}` : undefined;
	exchanges.push({
		round,
		label,
		status,
		ms: Date.now() - started,
		...(error ? { error } : {}),
		...(detail ? { detail } : {}),
		...(note ? { note } : {}),
	});
	return { status, body: buffer, json, size };
}

async function health(where: string): Promise<void> {
	try {
		const res = await fetch(`${current.url}/healthz`, { signal: AbortSignal.timeout(20_000) });
		if (res.status !== 200) healthFailures.push(`${round} ${where}: ${res.status}`);
		await res.arrayBuffer();
	} catch (caught) {
		healthFailures.push(`${round} ${where}: ${String(caught).slice(0, 120)}`);
	}
}

/** /healthz every 300 ms while `work` runs: the gateway must answer while a read is stuck. */
async function whilePolling<T>(where: string, work: Promise<T>): Promise<T> {
	let done = false;
	const poller = (async () => {
		while (!done) {
			await health(`${where} (polled)`);
			await new Promise((r) => setTimeout(r, 300));
		}
	})();
	try {
		return await work;
	} finally {
		done = true;
		await poller;
	}
}

/** No answer, a broken body, or a 5xx other than 507 snapshot_limit (documented for …/changes). */
const failed = (e: (typeof exchanges)[number]) =>
	e.status === 0 || e.error !== undefined || (e.status >= 500 && !(e.status === 507 && /changes/.test(e.label)));

const bash = (who: string, id: string, command: string, timeoutMs = 120_000) =>
	call(who, `bash ${command.slice(0, 60)}`, `/v1/sessions/${id}/bash`, {
		method: "POST",
		json: { command },
		timeoutMs,
	});

/** A run via the demo model (`bash: …`); its runId. */
async function prompt(name: Name, command: string): Promise<void> {
	const answer = await call(
		"alice",
		`prompt ${name} ${command.slice(0, 40)}`,
		`/v1/sessions/${ids[name]}/prompt?wait=true`,
		{
			method: "POST",
			json: { message: `bash: ${command}` },
			timeoutMs: 120_000,
		},
	);
	if (typeof answer.json?.runId === "string") runs[name].push(answer.json.runId);
}

const q = encodeURIComponent;

/** Every route that reads a workspace, on session `name`. */
async function readEverything(name: Name): Promise<void> {
	const id = ids[name];
	const base = `/v1/sessions/${id}`;
	const read = (label: string, path: string, options?: CallOptions) =>
		call("alice", `${name} ${label}`, base + path, options);

	await read("changes", "/changes");
	for (const runId of runs[name] ?? []) await read(`changes?runId=${runId}`, `/changes?runId=${q(runId)}`);
	await health(`${name} after changes`);

	await read("archive", "/archive", { gunzip: true, timeoutMs: 90_000 });
	await health(`${name} after archive`);

	// The root, page after page; every folder in it, one page (`many` two); every name's content.
	const entries: { path: string; type: string }[] = [];
	let cursor: string | null = null;
	for (let page = 0; page < 10; page++) {
		const listed = await read("files", `/files?limit=500${cursor ? `&cursor=${q(cursor)}` : ""}`);
		entries.push(...((listed.json?.entries as { path: string; type: string }[]) ?? []));
		cursor = listed.json?.nextCursor ?? null;
		if (!cursor) break;
	}
	const folders = [
		...entries.filter((e) => e.type === "dir").map((e) => e.path),
		...entries.filter((e) => e.type === "symlink").map((e) => e.path),
		".git/hooks",
		"nested/.git",
		"linkdir/data",
		"linkdir/bob",
		"link-root/etc",
		"link-up/..",
	];
	for (const path of folders) {
		const listed = await read(`files ${path}`, `/files?path=${q(path)}&limit=500`);
		if (path === "many" && listed.json?.nextCursor)
			await read("files many page 2", `/files?path=many&limit=500&cursor=${q(listed.json.nextCursor)}`);
	}
	await health(`${name} after listings`);

	const contents = [
		...entries.filter((e) => e.type !== "dir").map((e) => e.path),
		"link-token",
		"link-rel-token",
		"link-keys",
		"link-decoy",
		"link-bob/secret.txt",
		"link-bob-secret",
		"link-data/token",
		"linkdir/data/token",
		"linkdir/bob/secret.txt",
		"link-root/etc/passwd",
		"link-environ",
		"link-proc-cwd/token",
		"link-snapshots",
		`link-snapshots/${ids.A}/runs.json`,
		".git/config",
		".git/hooks/pre-commit",
		"nested/.git/config",
		"gitfile-shadow/.git",
		"dotgit-link/.git/config",
		"fifos/pipe",
		"many/f000001",
		"many/f100000",
		"-dir/-rf",
		"new\nline-dir/f",
		"a\nb",
		"--output=x",
		"-rf",
		`${"d/".repeat(60)}bottom.txt`,
		"git/config",
	];
	for (const path of new Set(contents)) {
		if (path === "huge.bin") {
			// 50 GB of holes: one range, and the start of the whole file, then hang up.
			await read("content huge.bin range", `/files/content?path=huge.bin`, { headers: { range: "bytes=0-1023" } });
			await read("content huge.bin", `/files/content?path=huge.bin`, { maxBytes: 1024 * 1024 });
			continue;
		}
		await read(`content ${JSON.stringify(path)}`, `/files/content?path=${q(path)}`, { timeoutMs: 30_000 });
	}
	await health(`${name} after contents`);

	// Each search of a folder with 100,000 files costs seconds on a busy VM: the whole set on A.
	const queries =
		name === "A"
			? ["NEEDLEINALINE", "BIGNEEDLE", "-rf", "--files", "--pre=./m.sh", "f099999", "pwned", "token", "secret"]
			: ["NEEDLEINALINE", "f099999"];
	for (const text of queries) {
		const found = await read(`search ${text}`, `/files/search?q=${q(text)}`);
		// Inside the 1 MB line (D has no ignore file that hides it): found, its line cut short.
		if (name === "D" && text === "NEEDLEINALINE") {
			const matches = (found.json?.matches ?? []) as { path: string; line: number; text: string }[];
			expect.soft(matches.map((m) => [m.path, m.line, m.text.length <= 1000])).toEqual([["long-line.txt", 1, true]]);
		}
	}
	if (name === "A") {
		await read("search glob", `/files/search?q=NEEDLE&glob=${q("*.txt")}`);
		await read("search glob dash", `/files/search?q=name&glob=${q("--pre=./m.sh")}`);
	}
	await health(`${name} after searches`);
}

/** A folder's tree as one hash: names, types, link targets, file contents (not followed). */
function hashTree(path: string): string {
	const hash = createHash("sha256");
	const walk = (p: string, rel: string) => {
		const stat = lstatSync(p);
		if (stat.isSymbolicLink()) hash.update(`L ${rel} ${readlinkSync(p)}\n`);
		else if (stat.isDirectory()) {
			hash.update(`D ${rel}\n`);
			for (const name of readdirSync(p).sort()) walk(join(p, name), `${rel}/${name}`);
		} else if (stat.isFile()) hash.update(`F ${rel} `).update(readFileSync(p)).update("\n");
		else hash.update(`O ${rel}\n`);
	};
	walk(path, ".");
	return hash.digest("hex");
}

function hostHashes(): Record<string, string> {
	return {
		token: hashTree(join(dataDir, "token")),
		"keys file": hashTree(keysFile),
		"decoy secret": hashTree(join(dataDir, "decoy-secret")),
		"bob's folder": hashTree(folder.Bo as string),
		"a file in the test root": hashTree(join(gw.root, "host-file.txt")),
		"the test root's names": readdirSync(gw.root).sort().join(","),
	};
}

/** Bytes on disk under `path` (blocks, so a sparse file counts what it takes). */
function diskBytes(path: string): number {
	if (!existsSync(path)) return 0;
	const stat = lstatSync(path);
	let total = stat.blocks * 512;
	if (stat.isDirectory()) for (const name of readdirSync(path)) total += diskBytes(join(path, name));
	return total;
}

beforeAll(async () => {
	keysDir = mkdtempSync(join(tmpdir(), "pi-gateway-hostile-keys-"));
	keysFile = join(keysDir, "keys.json");
	for (const who of ["alice", "bob"]) {
		const scopes = "sessions:read,sessions:write,approvals:read,approvals:answer";
		const args = ["keys", "create", "--principal", who, "--scopes", scopes, "--keys-file", keysFile];
		key[who] = (await run(process.execPath, [gatewayEntry, ...args], { cwd: repo })).stdout.trim();
	}
	gw = await startTestGateway({ workspaceRoot: undefined, keysFile });
	current = gw;
	dataDir = gw.config.dataDir;
	markDir = join(gw.root, "markers");
	mkdirSync(markDir);
	writeFileSync(join(dataDir, "decoy-secret"), decoyCanary);
	writeFileSync(join(gw.root, "host-file.txt"), hostFileCanary);
	canaries.set("the admin token", Buffer.from(current.config.token as string));
	for (const entry of JSON.parse(readFileSync(keysFile, "utf8")).keys as { principal: string; hash: string }[])
		canaries.set(`${entry.principal}'s key hash`, Buffer.from(entry.hash.replace(/^sha256:/, "")));
	canaries.set("bob's key", Buffer.from(key.bob as string));
	canaries.set("the decoy secret in the data dir", Buffer.from(decoyCanary));
	canaries.set("bob's file", Buffer.from(bobCanary));
	canaries.set("the file in the test root", Buffer.from(hostFileCanary));
}, 60_000);

afterAll(async () => {
	// (A git stuck on a FIFO holds close() until its deadline: a long timeout.)
	if (process.env.HOSTILE_LOG) writeFileSync(process.env.HOSTILE_LOG, JSON.stringify(exchanges, null, 1));
	await current?.close();
	if (gw) rmSync(gw.root, { recursive: true, force: true });
	if (keysDir) rmSync(keysDir, { recursive: true, force: true });
}, 90_000);

/** Runs a command with no stdin (a payload's `cat` would wait on it), killed after 20 s. */
function quietly(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<void> {
	return new Promise((done) => {
		const child = spawn(command, args, { cwd, env, stdio: "ignore" });
		const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
		child.on("close", () => {
			clearTimeout(timer);
			done();
		});
	});
}

/** The agent's command that plants `mode` in its cwd (hostile-plant.sh), knowing every host path. */
// Its text goes on stdin: the sandbox shows pi only its folder, so the fixture's own path (a clone
// under /tmp, say) may not be there.
const plant = (mode: string, snapshotsOf: string) =>
	`bash -s -- ${mode} ${markDir} ${dataDir} ${keysFile} ${folder.Bo} ${join(dataDir, "snapshots", snapshotsOf)} <<'HOSTILE_PLANT_EOF'\n${readFileSync(plantScript, "utf8")}\nHOSTILE_PLANT_EOF`;

describe("a hostile agent plants everything it can in every folder it can write", () => {
	it("(control) the payloads are live: a plain git on the host in a planted folder runs them", {
		timeout: 60_000,
	}, async () => {
		const control = mkdtempSync(join(tmpdir(), "pi-gateway-hostile-control-"));
		try {
			const [planted, marks] = [join(control, "folder"), join(control, "marks")];
			mkdirSync(planted);
			mkdirSync(marks);
			const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: marks };
			await run("bash", [plantScript, "folder", marks, join(control, "data"), "/none", "/none", "/none"], {
				cwd: planted,
				env,
			});
			for (const args of [["status"], ["add", "-A"], ["diff", "--cached"]]) await quietly("git", args, planted, env);
			expect(readdirSync(marks).filter((name) => name.startsWith("pwned-")).length).toBeGreaterThan(0);
		} finally {
			rmSync(control, { recursive: true, force: true });
		}
	});

	it("plants, runs, and every workspace read answers, before and after a restart", { timeout: 180_000 }, async () => {
		const create = async (who: string, body: Record<string, unknown>) => {
			const made = await call(who, `create ${who} ${JSON.stringify(body)}`, "/v1/sessions", {
				method: "POST",
				json: body,
			});
			expect(made.status, JSON.stringify(made.json)).toBe(201);
			return made.json as { id: string; cwd: string };
		};
		const bo = await create("bob", {});
		[ids.Bo, folder.Bo] = [bo.id, bo.cwd];
		expect((await bash("bob", bo.id, `echo ${bobCanary} > secret.txt && echo ok`)).json?.output).toBe("ok\n");
		for (const name of ["A", "C", "D"] as const) {
			const made = await create("alice", {});
			[ids[name], folder[name]] = [made.id, made.cwd];
		}
		// alice's area, the folder that holds her other sessions' folders: "." is hers to name.
		const area = await create("alice", { cwd: "." });
		[ids.B, folder.B] = [area.id, area.cwd];
		expect(folder.A?.startsWith(`${folder.B}/`)).toBe(true);
		hostBefore = hostHashes();
		// (control) The scan sees a canary: bob reading his own file carries his.
		await call("bob", "control: bob reads his own file", `/v1/sessions/${bo.id}/files/content?path=secret.txt`);
		expect(canaryHits).toEqual(["setup: control: bob reads his own file carries bob's file"]);
		canaryHits.length = 0;

		round = "before the restart";
		await prompt("A", "echo start > start.txt");
		const planted: [string, string, string][] = [
			["A", ids.A, plant("folder", ids.A)],
			["B", ids.B, plant("area", ids.B)],
			["C", ids.C, plant("many", ids.C)],
			["D", ids.D, plant("repos", ids.D)],
			["A's /tmp", ids.A, `cd /tmp && ${plant("tmp", ids.A)}`],
		];
		for (const [where, id, command] of planted) {
			const done = await bash("alice", id, command);
			expect([where, done.status, done.json?.exitCode]).toEqual([where, 200, 0]);
			expect(done.json?.output).toContain("planted");
		}
		const sizes = await bash("alice", ids.C, "ls many | wc -l; stat -c %s huge.bin");
		expect(sizes.json?.output).toBe(`100000\n${50 * 1024 ** 3}\n`);
		expect((await bash("alice", ids.D, "wc -c < long-line.txt")).json?.output).toBe("1000000\n");
		// What its links show it inside its sandbox (the answer is scanned like every other).
		await bash("alice", ids.A, 'for f in link-* linkdir/*; do cat -- "$f"; done 2>&1 | head -c 100000');
		await health("after planting");

		// Runs that touch the hostile files: each is snapshotted at its start and end.
		await prompt("A", "ls -la > listing.txt && echo more >> .gitattributes && echo x >> ./-rf");
		await prompt("A", "echo again >> start.txt && cat .git/config > /dev/null");
		await prompt("B", "echo b > b.txt");
		await prompt("C", "echo c >> small.txt");
		// D's nested repositories are gitlinks from its first snapshot on; the second meets them again.
		await prompt("D", "echo d > d.txt");
		await prompt("D", "echo d2 >> d.txt");
		await health("after runs");
		for (const name of ["A", "B", "C", "D"] as const) await readEverything(name);

		await current.close();
		round = "after the restart";
		current = await startGateway({
			host: "127.0.0.1",
			port: 0,
			workspaceRoot: undefined,
			dataDir,
			piAgentDir: join(gw.root, "agent"),
			logLevel: "silent",
			keysFile,
		});
		await health("after the restart");
		await prompt("A", "echo after >> start.txt");
		await prompt("B", "echo b2 >> b.txt");
		await prompt("D", "echo d3 >> d.txt");
		for (const name of ["A", "B", "C", "D"] as const) await readEverything(name);

		// The agent takes its huge file away: now C's 100,000 files are snapshotted (its run) and
		// its archive starts. (The area keeps a huge file of its own: 507 and 413 there, so that
		// the 100,000 files are snapshotted once. An archive of them is not read to its end: it
		// takes 25-60 s on this 2-core VM, the whole budget of this test.)
		round = "without the huge file";
		expect((await bash("alice", ids.C, "rm huge.bin && echo ok")).json?.output).toBe("ok\n");
		await whilePolling("C prompt", prompt("C", "echo c2 >> small.txt"));
		const changed = await call("alice", "C changes", `/v1/sessions/${ids.C}/changes?runId=${q(runs.C.at(-1) ?? "")}`);
		expect([changed.status, changed.json?.files?.map((f: { path: string }) => f.path)]).toEqual([200, ["small.txt"]]);
		const archive = await call("alice", "C archive (first MB)", `/v1/sessions/${ids.C}/archive`, {
			gunzip: true,
			maxBytes: 1024 * 1024,
		});
		expect(archive.status).toBe(200);
		await health("after the archive was hung up on");
	});

	it("traps that stop git or ripgrep (an invalid .gitmodules, FIFOs git and rg open by name) block no read for good", {
		timeout: 120_000,
	}, async () => {
		round = "traps";
		for (const [id, mode] of [
			[ids.A, "gitmodules"],
			[ids.C, "fifos"],
		] as const) {
			const done = await bash("alice", id, plant(mode, id));
			expect([mode, done.status, done.json?.exitCode]).toEqual([mode, 200, 0]);
		}
		await whilePolling("A prompt (.gitmodules)", prompt("A", "echo trapped >> start.txt"));
		const reads: [string, string, CallOptions?][] = [
			["A changes (.gitmodules)", `/v1/sessions/${ids.A}/changes`],
			["A changes?runId (.gitmodules)", `/v1/sessions/${ids.A}/changes?runId=${q(runs.A.at(-1) ?? "")}`],
			["A archive (.gitmodules)", `/v1/sessions/${ids.A}/archive`, { gunzip: true }],
			["C changes (FIFO .gitattributes)", `/v1/sessions/${ids.C}/changes`],
			["C search (FIFO .ignore)", `/v1/sessions/${ids.C}/files/search?q=TRAPNEEDLE`],
			["C content FIFO .gitattributes", `/v1/sessions/${ids.C}/files/content?path=traps/attr/.gitattributes`],
		];
		for (const [label, path, options] of reads) await whilePolling(label, call("alice", label, path, options));
		const answers = exchanges.filter((e) => e.round === round);
		expect(answers.filter(failed)).toEqual([]);
	});

	it("answered every read without a 5xx (507 snapshot_limit aside) and /healthz said 200 throughout", () => {
		const bad = exchanges.filter((e) => e.round !== "traps" && failed(e));
		expect.soft(bad).toEqual([]);
		expect.soft(healthFailures).toEqual([]);
	});

	it("ran no payload: no marker anywhere", async () => {
		expect.soft(readdirSync(markDir)).toEqual([]);
		// The test root (data dir, markers), and the home of the user running the gateway.
		const find = (args: string[]) =>
			run("find", args, { maxBuffer: 16 * 1024 * 1024 }).catch((error) => ({ stdout: String(error.stdout ?? "") }));
		const found = {
			stdout:
				(await find([gw.root, "-name", "pwned-*"])).stdout +
				(await find([homedir(), "-maxdepth", "1", "-name", "pwned-*"])).stdout,
		};
		// Shadow repositories named by their session (A, B, C, D).
		const named = (path: string) => Object.entries(ids).reduce((p, [name, id]) => p.replaceAll(id, `<${name}>`), path);
		expect.soft(found.stdout.split("\n").filter(Boolean).map(named)).toEqual([]);
	});

	it("put no secret in any answer", () => {
		expect(canaryHits).toEqual([]);
	});

	it("put no secret in any file the agent can read afterwards", { timeout: 60_000 }, async () => {
		// The patterns go in hex, so that no command line or conversation file holds them.
		const hex = [...canaries.values()].map((c) => c.toString("hex")).join(" ");
		const decode = "import sys; [print(bytes.fromhex(h).decode()) for h in sys.argv[1:]]";
		const scan = (where: string) =>
			`python3 -c '${decode}' ${hex} > /tmp/patterns && grep -rlF -D skip --exclude=patterns -f /tmp/patterns ${where} 2>/dev/null | head -20; echo scanned`;
		// (control) The scan finds a canary: bob's own folder holds his.
		expect((await bash("bob", ids.Bo, scan("."))).json?.output).toBe("./secret.txt\nscanned\n");
		// The area holds every folder of alice's; A's sandbox has the /tmp she planted in (it shows
		// her folder again: the test root, and so the data dir, lie under the host's /tmp).
		for (const [name, where] of [
			["B", "."],
			["A", "/tmp"],
		] as const) {
			const scanned = await bash("alice", ids[name], scan(where));
			expect.soft([name, where, scanned.json?.output]).toEqual([name, where, "scanned\n"]);
		}
	});

	it("changed no host file outside the agent's folders", () => {
		expect(hostHashes()).toEqual(hostBefore);
	});

	it("kept each shadow repository under 200 MB", () => {
		for (const name of ["A", "B", "C", "D"] as const) {
			const mib = Math.round(diskBytes(join(dataDir, "snapshots", ids[name])) / 1024 / 1024);
			expect.soft([name, mib < 200, mib]).toEqual([name, true, expect.any(Number)]);
		}
	});
});
