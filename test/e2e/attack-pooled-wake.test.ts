import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, realpathSync, renameSync, rmSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { alive, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// An attacker's review of the pooled wake (registry/pooled-wake.ts) and of the area's jiti cache
// shown at /tmp/jiti (process/areas.ts areaCaches). Two principals (alice, bob) and the admin
// token, the layout --workspace-root gives (sessions work in their area's folder), a short idle
// timeout and a warm pool, real pi in the sandbox, the demo model running bash (`bash: …`).
// Each test asserts the safe behaviour: one that fails shows a hole.
let gw: TestGateway;
let keys: string;
let alice: string;
let bob: string;

beforeAll(async () => {
	keys = mkdtempSync(join(tmpdir(), "pi-gateway-attack-pw-keys-"));
	const file = join(keys, "keys.json");
	alice = createKey(file, "alice", ["sessions:read", "sessions:write"]).secret;
	bob = createKey(file, "bob", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({ layout: "shared-root", keysFile: file, idleTimeoutMs: 1500, warmPool: 1 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(keys, { recursive: true, force: true });
});

const as = (key?: string): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});
async function create(key?: string, body: Record<string, unknown> = {}): Promise<string> {
	const made = await gw.api("/v1/sessions", { method: "POST", json: body, headers: as(key) });
	expect(made.status, JSON.stringify(made.body)).toBe(201);
	return made.body.id as string;
}
const view = async (id: string, key?: string) => (await gw.api(`/v1/sessions/${id}`, { headers: as(key) })).body;
const prompt = (id: string, message: string, key?: string) =>
	gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message }, headers: as(key) });
/** What a bash tool call prints, as the demo model reports it on the last line. */
async function bash(id: string, command: string, key?: string): Promise<string> {
	const run = await prompt(id, `bash: ${command}`, key);
	expect(run.status, JSON.stringify(run.body)).toBe(200);
	return (run.body.text as string).trim().split("\n").at(-1) as string;
}
const asleep = (id: string, key?: string) =>
	until(async () => (await view(id, key)).status === "stopped", 60_000).then(() => undefined);
const areaPath = (principal?: string) =>
	principal ? join(realpathSync(gw.workspace), `@${principal}`) : realpathSync(gw.workspace);
const pooledIn = (principal?: string) => until(() => gw.registry.pool?.readyPidsIn(areaPath(principal))[0], 60_000);
const killGroup = (pid: number) => {
	for (const target of [-pid, pid])
		try {
			process.kill(target, "SIGKILL");
		} catch {}
};

describe("the area's jiti cache at /tmp/jiti", () => {
	// The first version bound compile-cache/<area>/jiti at /tmp/jiti: a folder inside one the agent
	// writes, so the agent swapped it for a link and the next pi's bwrap, following it on the host,
	// showed whatever it named (bob's area here). The copy now lives where no pi can write its name
	// (areas.ts areaCaches): the same plant, at the old place and at the new, shows nothing.
	it("alice's agent cannot make the next pi of her area show bob's area at /tmp/jiti", async () => {
		const bobs = await create(bob);
		const bobArea = (await view(bobs, bob)).cwd as string;
		writeFileSync(join(bobArea, "bob-secret.txt"), "BOB-SECRET\n");
		const cache = join(gw.config.dataDir, "compile-cache", "@alice");
		const jiti = join(gw.config.dataDir, "compile-cache", "jiti", "@alice");
		const hers = await create(alice);
		const link = relative(realpathSync(cache), realpathSync(bobArea));
		try {
			// Where the bind's source was, and where it is now (not in her view: no name to swap there).
			const plant = `cd "$NODE_COMPILE_CACHE" && rm -rf jiti && ln -sn '${link}' jiti && echo planted; test -e ${jiti} && echo seen || echo hidden`;
			expect(await bash(hers, plant, alice)).toBe("hidden");
			expect(lstatSync(join(cache, "jiti")).isSymbolicLink()).toBe(true);
			// The next pi of her area (persist:false is never pooled: a cold start, bound now).
			const made = await gw.api("/v1/sessions", { method: "POST", json: { persist: false }, headers: as(alice) });
			expect(made.status, JSON.stringify(made.body)).toBe(201);
			const next = made.body.id as string;
			expect(await bash(next, "cat /tmp/jiti/bob-secret.txt 2>/dev/null || echo unseen", alice)).toBe("unseen");
			expect(await bash(next, "ls /tmp/jiti | grep -c '^extensions-demo-model\\.'", alice)).toBe("1");
			await bash(next, "echo alice-was-here > /tmp/jiti/planted-by-alice 2>/dev/null; echo done", alice);
			expect(existsSync(join(bobArea, "planted-by-alice"))).toBe(false);
			expect(existsSync(join(jiti, "planted-by-alice"))).toBe(true);
		} finally {
			rmSync(join(cache, "jiti"), { force: true });
			rmSync(join(bobArea, "planted-by-alice"), { force: true });
		}
	}, 120_000);
});

describe("pooled wake", () => {
	// headerCwd opens the session's file on the gateway's event loop (openSync, O_NOFOLLOW but
	// blocking): the file is in the session's pi-session folder, which its sandbox has writable.
	it("a session file alice's agent swapped for a FIFO does not stall the gateway's event loop on wake", async () => {
		const id = await create(alice);
		expect((await prompt(id, "echo: hi", alice)).status).toBe(200);
		const file = (await view(id, alice)).piSessionFile as string;
		expect(existsSync(file)).toBe(true);
		// After pi wrote this run's entries (it appends to its file), before the idle timeout stops it.
		await bash(
			id,
			`setsid sh -c 'sleep 0.4; rm -f "${file}"; mkfifo "${file}"' >/dev/null 2>&1 </dev/null & echo started`,
			alice,
		);
		await asleep(id, alice);
		expect(lstatSync(file).isFIFO()).toBe(true);
		await pooledIn("alice");
		// Something outside the gateway's process ends the stall (writes the FIFO) after 5 s.
		const writer: ChildProcess = spawn("timeout", ["20", "sh", "-c", `sleep 5; printf 'x\\n' > "${file}"`], {
			stdio: "ignore",
		});
		let woken: Promise<unknown> | undefined;
		try {
			const t0 = Date.now();
			woken = prompt(id, "echo: again", alice).catch((error) => error);
			await new Promise((resolve) => setTimeout(resolve, 200));
			const stalled = Date.now() - t0;
			expect(stalled, "the gateway's event loop was held while it opened the FIFO").toBeLessThan(2_000);
		} finally {
			const pid = (await view(id, alice)).pid as number | undefined;
			await gw.api(`/v1/sessions/${id}`, { method: "DELETE", headers: as(alice) });
			await woken;
			if (pid) await until(() => !alive(pid), 20_000).catch(() => killGroup(pid));
			writer.kill("SIGKILL");
		}
	}, 120_000);

	// wakeOnPooled awaits pi (switch_session, get_state, set_model) between taking the pooled pi out
	// of the pool and Session.adopt: a DELETE then finds a session without a process (stop() is a
	// no-op) and forgets it, and adopt gives the forgotten session the pi anyway: nothing stops it.
	it("a DELETE while the session wakes on a pooled pi leaves no pi process behind", async () => {
		let tried = 0;
		for (let attempt = 0; attempt < 3 && tried === 0; attempt++) {
			const id = await create();
			expect((await prompt(id, "echo: before")).status).toBe(200);
			const folder = dirname((await view(id)).piSessionFile as string);
			await asleep(id);
			const pid = await pooledIn();
			let deleted: Promise<{ status: number }> | undefined;
			// The moment the wake moved its files (its old folder is gone) and asked pi to switch.
			const watcher = watch(dirname(folder), () => {
				if (!deleted && !existsSync(folder)) deleted = gw.api(`/v1/sessions/${id}`, { method: "DELETE" });
			});
			const woken = await prompt(id, "echo: after").catch((error) => error);
			watcher.close();
			const gone = await deleted;
			if (gone?.status !== 204 && gone?.status !== 200) continue;
			tried++;
			expect((await gw.api(`/v1/sessions/${id}`)).status).toBe(404);
			const leaked = await until(() => !alive(pid), 10_000).then(
				() => false,
				() => true,
			);
			if (leaked) killGroup(pid);
			expect(
				leaked,
				`pooled pi ${pid} outlived the DELETE of ${id} (prompt answered ${JSON.stringify((woken as { status?: number }).status)}; registry has it: ${gw.registry.has(id)})`,
			).toBe(false);
		}
		expect(tried, "the DELETE never landed inside a wake").toBeGreaterThan(0);
	}, 180_000);
});

describe("pooled wake during shutdown", () => {
	// Same window as the DELETE: shutdown stops the registry's sessions (the waking one has no
	// process yet) and the pool (the taken pi is no longer in it); then adopt hands the pi over.
	it("a gateway that shuts down while a session wakes on a pooled pi leaves no pi behind", async () => {
		const own = await startTestGateway({ layout: "shared-root", idleTimeoutMs: 1500, warmPool: 1 });
		let pid: number | undefined;
		let closing: Promise<void> | undefined;
		try {
			for (let attempt = 0; attempt < 4 && !closing; attempt++) {
				const id = await own.session();
				const said = await own.api(`/v1/sessions/${id}/prompt?wait=true`, {
					method: "POST",
					json: { message: "echo: x" },
				});
				expect(said.status).toBe(200);
				const folder = dirname((await own.api(`/v1/sessions/${id}`)).body.piSessionFile as string);
				await until(async () => (await own.api(`/v1/sessions/${id}`)).body.status === "stopped", 60_000);
				pid = await until(() => own.registry.pool?.readyPids[0], 60_000);
				const watcher = watch(dirname(folder), () => {
					if (!closing && !existsSync(folder)) closing = own.close();
				});
				await own
					.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: y" } })
					.catch((error) => error);
				watcher.close();
			}
			expect(closing, "the shutdown never landed inside a wake").toBeDefined();
			await closing;
			const leaked = await until(() => !alive(pid as number), 10_000).then(
				() => false,
				() => true,
			);
			expect(leaked, `pooled pi ${pid} outlived the gateway's shutdown`).toBe(false);
		} finally {
			if (pid && alive(pid)) killGroup(pid);
			if (!closing) await own.close().catch(() => {});
			rmSync(own.root, { recursive: true, force: true });
		}
	}, 240_000);
});
