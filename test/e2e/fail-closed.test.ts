import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../helpers/gateway.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { bareMachinePath, hasCommand } from "../helpers/host.ts";

// A fresh machine has no bubblewrap until someone installs it. README's `npm start` there (no flag
// but a free port) must run no agent unconfined: it starts, says once what is missing and how to
// fix it, and refuses every create and resume (503 sandbox_unavailable) and every confined tool of
// the workspace; /readyz is 503 and /v1/info says so. Only an explicit --sandbox off runs agents as
// the gateway's user. The gateways here run as their own processes with a PATH that has no bwrap.
const dir = mkdtempSync(join(tmpdir(), "pi-gateway-fail-closed-"));
const bare = { PATH: bareMachinePath(join(dir, "bin"), ["bwrap"]) };
const started: GatewayProcess[] = [];
afterAll(async () => {
	killAll(started);
	await Promise.all(started.map((gw) => gw.exited));
	rmSync(dir, { recursive: true, force: true });
});

async function start(home: string, options: { env?: Record<string, string>; extra?: string[] } = {}) {
	const gw = await launchGateway({ root: join(dir, home), port: 0, readme: true, ...options });
	started.push(gw);
	// The start-up notices (stderr) follow the listening log line.
	await until(() => gw.stderr().includes("pi-gateway: listening on"));
	return gw;
}

async function stop(gw: GatewayProcess) {
	gw.child.kill("SIGTERM");
	await gw.exited;
}

/** The pids a process has started that are still its children. */
function children(pid: number): number[] {
	const tasks = readdirSync(`/proc/${pid}/task`);
	return tasks.flatMap((task) =>
		readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number),
	);
}

const unavailable = {
	type: "urn:pi-gateway:problem:sandbox_unavailable",
	status: 503,
	code: "sandbox_unavailable",
	detail: expect.stringMatching(/bwrap is not installed: not found on PATH.*apt-get install bubblewrap.*--sandbox off/),
	fix: expect.stringContaining("apt-get install bubblewrap"),
};

describe.runIf(hasCommand("bwrap"))("a machine without bubblewrap fails closed", () => {
	it("README's start listens, says once what is missing, and refuses every agent with the fix", async () => {
		const gw = await start("readme", { env: bare });
		const said = gw.stderr().match(/NO SESSION CAN START/g) ?? [];
		expect(said).toHaveLength(1);
		expect(gw.stderr()).toMatch(/sandbox is unavailable \(bwrap is not installed: not found on PATH\)/);
		expect(gw.stderr()).not.toMatch(/pi-gateway: sandbox off/);
		const listening = gw.logs.find((entry) => entry.msg === "pi-gateway listening");
		expect(listening).toMatchObject({ sandbox: "unavailable", sandboxFix: expect.stringContaining("bubblewrap") });

		const ready = await gw.api("/readyz");
		expect(ready.status).toBe(503);
		expect(ready.body).toMatchObject(unavailable);
		const info = await gw.api("/v1/info");
		expect(info.body.sandbox).toEqual({
			state: "unavailable",
			reason: "bwrap is not installed: not found on PATH",
			fix: expect.stringContaining("--sandbox off"),
		});
		expect(info.body.limits.warmPool).toBe(0);

		const created = await gw.api("/v1/sessions", { method: "POST", json: { name: "unconfined?" } });
		expect(created.status).toBe(503);
		expect(created.res.headers.get("content-type")).toMatch(/application\/problem\+json/);
		expect(created.body).toMatchObject(unavailable);
		// Nothing ran and nothing was left behind: no pi (nor warm one), no session, no folder.
		expect(children(gw.child.pid as number)).toEqual([]);
		expect((await gw.api("/v1/sessions")).body.sessions).toEqual([]);
		const workspaces = join(dir, "readme", ".pi-gateway", "workspaces");
		expect(existsSync(workspaces) ? readdirSync(workspaces) : []).toEqual([]);
		await stop(gw);
	});

	it("--sandbox on refuses to start, names the fix, and writes no token", async () => {
		const home = join(dir, "on");
		await expect(start("on", { env: bare, extra: ["--sandbox", "on"] })).rejects.toThrow(
			/exited \(2\).*--sandbox on, but bwrap is not installed: not found on PATH; install bubblewrap/s,
		);
		expect(existsSync(join(home, ".pi-gateway", "token"))).toBe(false);
	});

	it("a start refused for any reason (a port in use) writes no token either", async () => {
		const busy = createServer().listen(0, "127.0.0.1");
		await once(busy, "listening");
		const port = (busy.address() as AddressInfo).port;
		try {
			await expect(launchGateway({ root: join(dir, "busy"), port, readme: true })).rejects.toThrow(/is already in use/);
		} finally {
			busy.close();
		}
		expect(existsSync(join(dir, "busy", ".pi-gateway", "token"))).toBe(false);
	});

	it("only --sandbox off runs agents unconfined, and says so", async () => {
		const gw = await start("off", { env: bare, extra: ["--sandbox", "off"] });
		expect(gw.stderr()).toMatch(/pi-gateway: sandbox off \(--sandbox off\): pi and its tools run unconfined/);
		expect((await gw.api("/readyz")).status).toBe(200);
		expect((await gw.api("/v1/info")).body.sandbox).toEqual({ state: "unconfined", reason: "--sandbox off" });
		const created = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		await stop(gw);
	});

	it("a session made sandboxed is kept but not run unconfined after bubblewrap went away", {
		timeout: 120_000,
	}, async () => {
		let gw = await start("kept");
		expect((await gw.api("/v1/info")).body.sandbox).toEqual({ state: "sandboxed" });
		const created = await gw.api("/v1/sessions", { method: "POST", json: { name: "kept" } });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: echo kept > kept.txt" },
		});
		expect(run.body.stopReason).toBe("stop");
		await stop(gw);

		gw = await start("kept", { env: bare });
		const listed = await gw.api(`/v1/sessions/${id}`);
		expect(listed.status).toBe(200);
		expect(listed.body.name).toBe("kept");
		const prompt = await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "echo: hi" } });
		expect(prompt.status).toBe(503);
		expect(prompt.body).toMatchObject(unavailable);
		// The gateway's own tools on the agent's bytes (ripgrep, git) are refused too.
		const search = await gw.api(`/v1/sessions/${id}/files/search?q=kept`);
		expect(search.status).toBe(503);
		expect(search.body).toMatchObject(unavailable);
		expect(children(gw.child.pid as number)).toEqual([]);
		await stop(gw);

		// Nothing was lost: with bubblewrap back, the same session runs on its conversation.
		gw = await start("kept");
		const again = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: cat kept.txt" },
		});
		expect(again.status).toBe(200);
		expect(again.body.text).toContain("kept");
		await stop(gw);
	});
});
