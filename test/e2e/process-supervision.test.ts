import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";
import { collect, readFrames } from "../helpers/sse.ts";

// Real pi, and the gateway as its own OS process (node src/main.ts) so it can be signalled.
const repo = resolve(import.meta.dirname, "../..");
let root: string;
const launched: ChildProcess[] = [];

const dirs = (name: string) => ({
	workspaceRoot: join(root, "workspace"),
	dataDir: join(root, `data-${name}`),
	piAgentDir: join(root, "agent"),
});

interface Launched {
	child: ChildProcess;
	url: string;
	stderr: () => string;
	api(path: string, init?: { method?: string; json?: unknown }): Promise<{ status: number; body: any }>;
	fetch(path: string): Promise<Response>;
}

/** Starts `node src/main.ts` on a free port and waits for its "listening" log line. */
async function launch(name: string): Promise<Launched> {
	const d = dirs(name);
	const args = [gatewayEntry, "--port", "0", "--shutdown-grace-ms", "1000", "--log-level", "info"];
	// No drain: SIGTERM stops a run at once here (drain.test.ts lets one settle).
	args.push("--drain-timeout-ms", "0");
	args.push("--workspace-root", d.workspaceRoot, "--data-dir", d.dataDir, "--pi-agent-dir", d.piAgentDir);
	const child = spawn(process.execPath, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
	launched.push(child);
	let err = "";
	child.stderr?.on("data", (chunk) => {
		err += chunk;
	});
	let out = "";
	const url = await new Promise<string>((ok, fail) => {
		child.stdout?.on("data", (chunk) => {
			out += chunk;
			const listening = out.split("\n").find((l) => l.includes('"pi-gateway listening"'));
			if (listening) ok(JSON.parse(listening).url);
		});
		child.once("exit", (code) => fail(new Error(`gateway exited (${code}): ${err}`)));
	});
	// The token the gateway generated at its first start, read the way a user would.
	const token = readFileSync(join(d.dataDir, "token"), "utf8").trim();
	const api: Launched["api"] = async (path, init = {}) => {
		const res = await fetch(url + path, {
			method: init.method ?? "GET",
			headers: {
				authorization: `Bearer ${token}`,
				...(init.json === undefined ? {} : { "content-type": "application/json" }),
			},
			body: init.json === undefined ? undefined : JSON.stringify(init.json),
		});
		const text = await res.text();
		return { status: res.status, body: text ? JSON.parse(text) : undefined };
	};
	const raw = (path: string) => fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
	return { child, url, stderr: () => err, api, fetch: raw };
}

beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-proc-"));
	for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
});
afterAll(() => {
	for (const child of launched) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
	rmSync(root, { recursive: true, force: true });
});

describe("the gateway process", () => {
	it("SIGTERM: streams end with a final frame, every child is stopped, exit code 0", async () => {
		const gw = await launch("term");
		const busy = (await gw.api("/v1/sessions", { method: "POST", json: { name: "busy" } })).body.id;
		await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		const pids = (await gw.api("/v1/sessions")).body.sessions.map((s: { pid: number }) => s.pid);
		expect(pids.every(alive)).toBe(true);
		const stream = await gw.fetch(`/v1/sessions/${busy}/events`);
		expect(
			(await gw.api(`/v1/sessions/${busy}/prompt`, { method: "POST", json: { message: "slow: 100" } })).status,
		).toBe(202);
		await until(async () => (await gw.api(`/v1/sessions/${busy}`)).body.status === "running");
		gw.child.kill("SIGTERM");
		const frames = await collect(stream);
		expect(frames.at(-2)?.json).toEqual({ type: "session_status", sessionId: busy, status: "stopped" });
		expect(frames.at(-1)?.json).toMatchObject({ type: "session_exit", reason: "shutdown", resumable: true });
		const [code, signal] = await once(gw.child, "exit");
		expect([code, signal]).toEqual([0, null]);
		// stdin close, then SIGTERM after the grace at the latest: exit 0 and no child left.
		expect(pids.filter(alive)).toEqual([]);
		expect(gw.stderr()).toContain("pi-gateway: SIGTERM, stopping every session");
	});

	it("SIGKILL: the children exit by themselves (stdin EOF); a new gateway resumes from the data dir", {
		timeout: 90_000,
	}, async () => {
		const gw = await launch("kill");
		const keep = (await gw.api("/v1/sessions", { method: "POST", json: { name: "keep" } })).body.id;
		await gw.api("/v1/sessions", { method: "POST", json: { persist: false } });
		const run = await gw.api(`/v1/sessions/${keep}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: before the kill" },
		});
		expect(run.body.text).toBe("before the kill");
		const messages = (await gw.api(`/v1/sessions/${keep}/messages`)).body;
		const pids = (await gw.api("/v1/sessions")).body.sessions.map((s: { pid: number }) => s.pid);
		expect(pids).toHaveLength(2);
		gw.child.kill("SIGKILL");
		await once(gw.child, "exit");
		await until(() => pids.every((pid: number) => !alive(pid)), 10_000);

		let next: TestGateway | undefined;
		try {
			next = await startTestGateway(dirs("kill"));
			const listed = (await next.api("/v1/sessions")).body.sessions;
			expect(listed.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([[keep, "stopped"]]);
			// An unclean stop may have lost the last second of sequence numbers: the log skips well past them.
			expect(listed[0].lastEventId).toBeGreaterThanOrEqual(100_000);
			expect((await next.api(`/v1/sessions/${keep}/messages`)).body).toEqual(messages);
		} finally {
			await next?.stop();
		}
	});
});

describe("a pi child killed with SIGKILL mid-run", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway();
	});
	afterAll(() => gw?.stop());

	it("crashes its session only; the session can be resumed on its file", async () => {
		const victim = await gw.session({ name: "victim" });
		const other = await gw.session({ name: "other" });
		await gw.api(`/v1/sessions/${victim}/prompt?wait=true`, { method: "POST", json: { message: "echo: first" } });
		const { pid } = (await gw.api(`/v1/sessions/${victim}`)).body;
		const frames = readFrames(await gw.fetch(`/v1/sessions/${victim}/events`));
		expect(
			(await gw.api(`/v1/sessions/${victim}/prompt`, { method: "POST", json: { message: "slow: 50" } })).status,
		).toBe(202);
		const seen: string[] = [];
		let killed = false;
		for await (const frame of frames) {
			seen.push(frame.event ?? "");
			// Once: more deltas may already be on their way when pi is gone.
			if (frame.event === "message_update" && !killed) {
				process.kill(pid, "SIGKILL");
				killed = true;
			}
			if (frame.event === "session_exit") {
				expect(frame.json).toMatchObject({ reason: "crashed", signal: "SIGKILL", code: null, resumable: true });
				break;
			}
		}
		expect(seen.slice(-2)).toEqual(["session_status", "session_exit"]);
		expect((await gw.api(`/v1/sessions/${victim}`)).body.status).toBe("crashed");
		const neighbour = await gw.api(`/v1/sessions/${other}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: unaffected" },
		});
		expect(neighbour.body.text).toBe("unaffected");

		const resumed = await gw.api(`/v1/sessions/${victim}/resume`, { method: "POST" });
		expect(resumed.status).toBe(200);
		expect(resumed.body.status).toBe("idle");
		const texts = (await gw.api(`/v1/sessions/${victim}/messages`)).body.messages
			.filter((m: { role: string }) => m.role !== "system")
			.map((m: { content: { text: string }[] }) => m.content[0]?.text);
		expect(texts.slice(0, 2)).toEqual(["echo: first", "first"]);
		const after = await gw.api(`/v1/sessions/${victim}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: alive again" },
		});
		expect(after.body.text).toBe("alive again");
	});
});
