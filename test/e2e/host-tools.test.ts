import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/sessions/process/sandbox.ts";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// The gateway's own tools (git for changes, ripgrep for search) on what the agent wrote, in the
// layout README gives users (no --workspace-root: sessions work under <data-dir>/workspaces).
// Real pi with its demo model: `bash: CMD` makes a run run CMD; POST …/bash runs it outside a run.
let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({ workspaceRoot: undefined });
	id = await gw.session();
});
afterAll(async () => {
	await gw?.stop();
});

const bash = async (command: string) => {
	const res = await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command } });
	expect(res.status).toBe(200);
	expect(res.body.exitCode).toBe(0);
};
const run = async (command: string) => {
	const res = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		json: { message: `bash: ${command}` },
	});
	expect(res.status).toBe(200);
	return res.body.runId as string;
};
const search = (q: string) => gw.api(`/v1/sessions/${id}/files/search?q=${encodeURIComponent(q)}`);
const changesOf = async (runId: string) => {
	const res = await gw.api(`/v1/sessions/${id}/changes?runId=${runId}`);
	expect(res.status).toBe(200);
	return res.body.files as { path: string; status: string; binary: boolean; diff: string | null }[];
};

describe("the gateway's host-side tools on the agent's bytes", () => {
	it("run confined here: the sandbox holds on this machine and the gateway uses it", () => {
		expect(probeSandbox().enabled).toBe(true);
		expect(gw.config.sandbox).toBe("on");
		expect(gw.config.workspaceRoot).toBe(join(gw.root, "data", "workspaces"));
	});

	it("a search over a file with one 900,000-character line answers, and the gateway still does afterwards", async () => {
		await bash(
			"head -c 900000 /dev/zero | tr '\\0' a > long.txt && echo zz >> long.txt && echo 'short zz' > short.txt",
		);
		const res = await search("zz");
		expect(res.status).toBe(200);
		const byPath = new Map(res.body.matches.map((m: { path: string }) => [m.path, m]));
		expect(byPath.get("short.txt")).toEqual({ path: "short.txt", line: 1, text: "short zz" });
		expect(byPath.get("long.txt")).toEqual({ path: "long.txt", line: 1, text: "a".repeat(300) });
		expect((await gw.api(`/v1/sessions/${id}`)).status).toBe(200);
		expect((await search("short")).body.matches).toContainEqual({ path: "short.txt", line: null, text: null });
	});

	it("a match with NUL bytes around it is reported, flagged binary", async () => {
		await bash("printf 'head\\0\\0\\npre\\0 qq post\\nqq plain\\n' > blob.bin");
		const res = await search("qq");
		expect(res.status).toBe(200);
		expect(res.body.matches).toEqual([
			{ path: "blob.bin", line: 2, text: "pre\uFFFD qq post", binary: true },
			{ path: "blob.bin", line: 3, text: "qq plain" },
		]);
	});

	it("a .gitignore of `*` hides no new file from what a run changed", async () => {
		const runId = await run("echo '*' > .gitignore && echo new > new.txt && echo more >> short.txt");
		const files = await changesOf(runId);
		expect(files.map((f) => [f.path, f.status])).toEqual([
			[".gitignore", "added"],
			["new.txt", "added"],
			["short.txt", "modified"],
		]);
		expect(files.find((f) => f.path === "new.txt")?.diff).toContain("+new");
	});

	it("a planted .git/ and .gitattributes with filter, diff and textconv lines execute nothing", async () => {
		const marker = join(gw.root, "pwned");
		const script = `#!/bin/sh\\ntouch ${marker}\\ncat\\n`;
		const config = `[filter \\"z\\"]\\n\\tclean = sh ./p.sh\\n\\tsmudge = sh ./p.sh\\n\\trequired\\n[diff \\"z\\"]\\n\\ttextconv = sh ./p.sh\\n\\tcommand = sh ./p.sh\\n[core]\\n\\tfsmonitor = sh ./p.sh\\n\\thooksPath = hooks\\n`;
		await bash(
			[
				`printf '${script}' > p.sh`,
				"mkdir -p .git/hooks git hooks",
				`printf "${config}" | tee git/config .git/config > /dev/null`,
				"cp p.sh .git/hooks/pre-commit && cp p.sh hooks/post-index-change && chmod +x .git/hooks/* hooks/*",
				"echo 'ref: refs/heads/main' > .git/HEAD",
				"printf '* filter=z diff=z\\n*.txt text eol=crlf\\n' > .gitattributes",
			].join(" && "),
		);
		const runId = await run("echo changed >> new.txt && echo fresh > fresh.txt");
		const files = await changesOf(runId);
		expect(files.map((f) => f.path)).toEqual(["fresh.txt", "new.txt"]);
		// Stored as written: no filter, no textconv, no eol conversion.
		expect(files.find((f) => f.path === "new.txt")?.diff).toContain(" new\n+changed\n");
		const all = await gw.api(`/v1/sessions/${id}/changes`);
		expect(all.status).toBe(200);
		expect(existsSync(marker)).toBe(false);
	});

	it("a runId that is not one of a kept run is 404 run_not_found, however it is spelled", async () => {
		for (const runId of [
			"--help",
			"-p",
			"--output",
			"HEAD",
			"gw_0",
			"..",
			"4b825dc642cb6eb9a060e54bf8d69288fbee4904",
		]) {
			const res = await gw.api(`/v1/sessions/${id}/changes?runId=${encodeURIComponent(runId)}`);
			expect(res.status, runId).toBe(404);
			expect(res.body.code, runId).toBe("run_not_found");
		}
	});
});
