import { mkdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/app/server.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// What a sandboxed pi (and every tool it runs) can and cannot touch, seen from its own bash tool.
let gw: TestGateway;
let a: string;
let b: string;
beforeAll(async () => {
	gw = await startTestGateway({ sandbox: "on" });
	for (const name of ["a", "b"]) {
		mkdirSync(join(gw.workspace, name));
		writeFileSync(join(gw.workspace, name, "secret.txt"), `secret of ${name}\n`);
	}
	writeFileSync(join(gw.workspace, "root-file.txt"), "in the root\n");
	a = await gw.session({ cwd: "a" });
	b = await gw.session({ cwd: "b" });
});
afterAll(() => gw?.stop());

const sh = async (id: string, command: string) =>
	(await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command } })).body as {
		output: string;
		exitCode: number;
	};

describe("a sandboxed session", () => {
	it("writes its own folder, and cannot see other sessions' folders, the root, or the data dir", async () => {
		expect((await sh(a, "echo mine > mine.txt && cat mine.txt secret.txt")).output).toBe("mine\nsecret of a\n");
		const probe = await sh(
			a,
			`cat ../b/secret.txt; cat ${join(gw.workspace, "root-file.txt")}; ls ${gw.config.dataDir}; ls -A ${gw.workspace}`,
		);
		expect(probe.output).not.toContain("secret of b");
		expect(probe.output).not.toContain("in the root");
		expect(probe.output).not.toContain("gateway.db");
		expect(probe.output).toContain("pi-sessions");
		// The workspace root shows nothing but this session's own folder.
		expect(probe.output.trim().split("\n").at(-1)).toBe("a");
	});

	it("has the system read-only, a private /tmp, and no view of the gateway's processes", async () => {
		expect((await sh(a, "touch /usr/pi-gateway-probe 2>&1; echo $?")).output).toMatch(/Read-only file system\n1\n$/);
		await sh(a, "echo from-a > /tmp/shared-probe");
		expect((await sh(b, "cat /tmp/shared-probe 2>&1 || echo absent")).output).toContain("absent");
		const ps = await sh(a, "ls /proc | grep -c '^[0-9]'");
		expect(Number(ps.output.trim())).toBeLessThan(10);
		expect((await sh(a, `test -e /proc/${process.pid} && echo visible || echo hidden`)).output).toBe("hidden\n");
	});

	it("starts in a sub-folder of a workspace root that holds the gateway's own install (npm start's default)", async () => {
		const repo = resolve(import.meta.dirname, "../..");
		const own = await startTestGateway({ sandbox: "on", workspaceRoot: repo });
		try {
			const id = await own.session({ cwd: "examples", extensions: ["permission-gate"] });
			const { body } = await own.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: "pwd; ls .." } });
			expect(body.output).toBe(`${join(repo, "examples")}\nexamples\nextensions\nnode_modules\n`);
		} finally {
			await own.stop();
		}
	});

	it("--sandbox on refuses to start where bubblewrap cannot run", async () => {
		const path = process.env.PATH;
		process.env.PATH = "/nonexistent";
		try {
			await expect(
				startGateway({ port: 0, sandbox: "on", dataDir: join(gw.root, "no-bwrap"), logLevel: "silent" }),
			).rejects.toThrow(/--sandbox on, but bwrap is not installed: not found on PATH; install bubblewrap/);
		} finally {
			process.env.PATH = path;
		}
	});

	it("sees only its own conversation files; a deleted session's file resumes by pi id in a new session", async () => {
		const said = await gw.api(`/v1/sessions/${a}/prompt?wait=true`, {
			method: "POST",
			json: { message: "echo: a's secret plan" },
		});
		expect(said.status).toBe(200);
		// pi writes its file with the first exchange: b says something too.
		expect(
			(await gw.api(`/v1/sessions/${b}/prompt?wait=true`, { method: "POST", json: { message: "echo: b" } })).status,
		).toBe(200);
		const fileA = (await gw.api(`/v1/sessions/${a}`)).body.piSessionFile as string;
		const fileB = (await gw.api(`/v1/sessions/${b}`)).body.piSessionFile as string;
		expect(fileA.startsWith(join(gw.config.dataDir, "pi-sessions"))).toBe(true);
		expect(dirname(fileA)).not.toBe(dirname(fileB));
		// b looks for a's file by every path it could know: the folder above its own, a's exact path.
		const listing = await sh(b, `ls -R ${join(gw.config.dataDir, "pi-sessions")}`);
		expect(listing.output).toContain(basename(fileB));
		expect(listing.output).not.toContain(basename(fileA));
		const read = await sh(b, `cat ${fileA} 2>&1; grep -r "secret plan" ${gw.config.dataDir} 2>&1`);
		expect(read.output).toContain("No such file");
		expect(read.output).not.toContain("secret plan");

		// a goes away; its conversation stays, and a new session picks it up by pi id, in a's folder.
		const piId = (await gw.api(`/v1/sessions/${a}`)).body.piSessionId as string;
		expect((await gw.api(`/v1/sessions/${a}`, { method: "DELETE" })).status).toBe(204);
		const c = await gw.session({ cwd: "a", resume: piId });
		const view = (await gw.api(`/v1/sessions/${c}`)).body;
		expect(view.piSessionFile).toBe(fileA);
		const messages = (await gw.api(`/v1/sessions/${c}/messages`)).body.messages as { content: unknown }[];
		expect(JSON.stringify(messages)).toContain("a's secret plan");
		await gw.api(`/v1/sessions/${c}`, { method: "DELETE" });
	});
});
