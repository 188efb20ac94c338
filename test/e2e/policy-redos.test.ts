import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../helpers/gateway.ts";
import { gatewayEntry } from "../helpers/gateway-entry.ts";

// Issue 20's reproducer: a key with only sessions:write puts `\w*\w*\w*\w*!` (13 characters, no
// groups) in a session policy and one long dialog title pinned the event loop (/healthz unanswered,
// SIGTERM ignored). The gateway runs as its own process here: frozen in the test's own process,
// it would freeze the runner that has to report it.
const repo = resolve(import.meta.dirname, "../..");
const token = "redos-test-token";
let root: string;
let child: ChildProcess;
let url = "";

beforeAll(async () => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-redos-"));
	for (const dir of ["workspace", "agent"]) mkdirSync(join(root, dir));
	child = spawn(
		process.execPath,
		[
			gatewayEntry,
			"--port",
			"0",
			"--host",
			"127.0.0.1",
			"--workspace-root",
			join(root, "workspace"),
			"--data-dir",
			join(root, "data"),
			"--pi-agent-dir",
			join(root, "agent"),
			"--log-level",
			"info",
		],
		{ cwd: repo, env: { ...process.env, PI_GATEWAY_TOKEN: token }, stdio: ["ignore", "pipe", "pipe"] },
	);
	let out = "";
	child.stdout?.on("data", (chunk) => {
		out += chunk;
		url ||= /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1] ?? "";
	});
	child.stderr?.resume();
	await until(() => url !== "", 20_000);
});

afterAll(async () => {
	if (child && child.exitCode === null && child.signalCode === null) {
		const exited = new Promise((r) => child.once("exit", r));
		child.kill("SIGTERM");
		// A gateway that ignores SIGTERM (the bug this file replays) still must not outlive the suite.
		await until(() => child.exitCode !== null || child.signalCode !== null, 15_000).catch(() => child.kill("SIGKILL"));
		await exited;
	}
	rmSync(root, { recursive: true, force: true });
});

const api = async (path: string, init: RequestInit & { json?: unknown } = {}) => {
	const res = await fetch(url + path, {
		...init,
		headers: { authorization: `Bearer ${token}`, ...(init.json ? { "content-type": "application/json" } : {}) },
		body: init.json ? JSON.stringify(init.json) : init.body,
	});
	return { status: res.status, body: (await res.json().catch(() => null)) as any };
};

describe("a pattern built to backtrack, in a session policy", () => {
	it("leaves /healthz answering while a 4,096-character dialog title is matched against it", async () => {
		const pattern = String.raw`\w*\w*\w*\w*!`;
		expect(pattern).toHaveLength(13);
		const created = await api("/v1/sessions", {
			method: "POST",
			json: {
				extensions: ["permission-gate"],
				policies: { rules: [{ name: "redos", match: { title: pattern }, action: "deny" }] },
			},
		});
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		// The gate's title: "Allow this bash command?\n\n  rm -rf ./aaaa…" — a run of word characters
		// with no `!`, the input that makes a backtracking engine try every split of the run.
		const target = "a".repeat(4096);
		expect(
			(await api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: `bash: rm -rf ./${target}` } }))
				.status,
		).toBe(202);
		const pending = await until(async () => {
			const { body } = await api(`/v1/sessions/${id}/approvals?status=pending`);
			return body?.approvals?.[0];
		}, 25_000);
		expect(pending.title.length).toBeGreaterThan(4096);
		expect(pending.resolvedBy).toBeNull();
		const health = await fetch(`${url}/healthz`);
		expect(health.status).toBe(200);
		expect(
			(await api(`/v1/sessions/${id}/approvals/${pending.id}`, { method: "POST", json: { value: "Block" } })).status,
		).toBe(200);
		expect((await api(`/v1/sessions/${id}`, { method: "DELETE" })).status).toBe(204);
	});
});
