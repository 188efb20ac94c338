import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docBlocks, fits, outputMark, repo, scriptOf } from "../helpers/doc-blocks.ts";
import { freePort, hasCommand } from "../helpers/host.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";

// docs/cluster.md, as an operator runs it (issue 30, item 5): the two-node block keeps the database
// URL, the cluster secret and the token in files; the restart block, run later in a fresh shell
// (no variable of the first one), stops one node with SIGTERM and starts it again from those files
// alone, and it rejoins: the other node forwards to it and it forwards to the other, which only
// works with the same cluster secret. The blocks run as written, with this test's database URL and
// free ports in place of the page's, and HOME a folder of this test's.
const page = "docs/cluster.md";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, check: () => Promise<T | false | undefined>, ms = 60_000): Promise<T> {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		const value = await check().catch(() => false as const);
		if (value) return value;
		await sleep(200);
	}
	throw new Error(`timed out waiting for ${what}`);
}

/** The gateway processes (node src/main.ts, not npm or sh) whose data dir is `dataDir`. */
function gatewaysOf(dataDir: string): number[] {
	return leftovers(dataDir)
		.map((line) => line.split(" "))
		.filter(([, command, script]) => /\bnode$/.test(command ?? "") && /src\/main\.ts$/.test(script ?? ""))
		.map(([pid]) => Number(pid));
}

/** Processes whose command line names a path under `dir`. */
function leftovers(dir: string): string[] {
	const found: string[] = [];
	for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
		try {
			const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
			if (cmdline.includes(dir)) found.push(`${pid} ${cmdline.slice(0, 120)}`);
		} catch {}
	}
	return found;
}

describe.skipIf(!hasCommand("openssl") || !hasCommand("curl"))(
	"docs/cluster.md: restarting a node from a fresh shell",
	() => {
		const blocks = docBlocks(page);
		const startBlock = blocks.find((b) => b.marker?.startsWith("run by test/e2e/docs-nginx.test.ts"));
		const restartBlock = blocks.find((b) => b.marker?.startsWith("run by test/e2e/docs-cluster-restart.test.ts"));
		const home = mkdtempSync(join(tmpdir(), "pi-gateway-docs-restart-"));
		let pg: TestPostgres | undefined;
		let ports: { n1: number; n2: number };
		let databaseUrl = "";
		/** The shells' process groups (bash, npm, the gateways), for the cleanup. */
		const groups: ChildProcess[] = [];

		/** A block as written, in a new bash with nothing but PATH and HOME (a fresh shell); resolves with its output. */
		const run = (code: string) => {
			const shell = spawn("bash", ["-e", "-c", code], {
				cwd: repo,
				env: { PATH: process.env.PATH, HOME: home },
				detached: true,
				stdio: ["ignore", "pipe", "pipe"],
			});
			groups.push(shell);
			let out = "";
			let err = "";
			shell.stdout?.setEncoding("utf8").on("data", (text: string) => {
				out += text;
			});
			shell.stderr?.setEncoding("utf8").on("data", (text: string) => {
				err += text;
			});
			return new Promise<{ code: number | null; out: string; err: string }>((done) =>
				shell.once("close", (code) => done({ code, out, err })),
			);
		};
		const ported = (text: string) =>
			text
				.replace(/postgres:\/\/\S+/g, databaseUrl)
				.replace(/\b8801\b/g, String(ports.n1))
				.replace(/\b8802\b/g, String(ports.n2));
		const token = () => readFileSync(join(home, ".pi-gateway", "token"), "utf8").trim();
		const api = async (port: number, path: string, init: RequestInit = {}) => {
			const res = await fetch(`http://127.0.0.1:${port}${path}`, {
				...init,
				headers: { authorization: `Bearer ${token()}`, "content-type": "application/json" },
			});
			const text = await res.text();
			return { status: res.status, body: text ? JSON.parse(text) : undefined };
		};
		const ready = async (port: number) => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok;
		const pidOf = (node: string) => Number(readFileSync(join(home, ".pi-gateway", `${node}.pid`), "utf8"));

		beforeAll(async () => {
			expect(startBlock, `${page}: the two-node block`).toBeDefined();
			expect(restartBlock, `${page}: a block marked "run by test/e2e/docs-cluster-restart.test.ts"`).toBeDefined();
			pg = await startTestPostgres();
			databaseUrl = await pg.freshDatabase();
			ports = { n1: await freePort(), n2: await freePort() };
		}, 120_000);

		afterAll(async () => {
			for (const shell of groups) {
				try {
					process.kill(-(shell.pid as number), "SIGTERM");
				} catch {}
			}
			await until("every process of the try to end", async () => leftovers(home).length === 0, 30_000).catch(() => {
				for (const shell of groups) {
					try {
						process.kill(-(shell.pid as number), "SIGKILL");
					} catch {}
				}
			});
			await pg?.stop();
			rmSync(home, { recursive: true, force: true });
		}, 60_000);

		it("starts two nodes from files, restarts one in a new shell, and it rejoins with the same secret", async () => {
			const started = await run(ported(startBlock?.code ?? ""));
			expect(started.code, started.err).toBe(0);
			await until("both nodes", async () => (await ready(ports.n1)) && (await ready(ports.n2)));
			// Nothing secret on a command line: the files hold it, mode 0600.
			for (const node of ["n1", "n2"]) {
				const cmdline = readFileSync(`/proc/${pidOf(node)}/cmdline`, "utf8");
				expect(cmdline).not.toContain(token());
				expect(cmdline).not.toContain(new URL(databaseUrl).password);
			}
			const created = await api(ports.n1, "/v1/sessions", { method: "POST", body: "{}" });
			// What the node said, if it failed (CI once saw this create fail with no word of why).
			const said = (node: string) =>
				`${JSON.stringify(created.body)}\n${readFileSync(join(home, ".pi-gateway", `${node}.log`), "utf8").slice(-3000)}`;
			expect(created.status, said("n1")).toBe(201);
			const id = created.body.id as string;
			const run1 = await api(ports.n1, `/v1/sessions/${id}/prompt?wait=true`, {
				method: "POST",
				body: JSON.stringify({ message: "echo: before the restart" }),
			});
			expect(run1.status, said("n1")).toBe(200);
			const before = pidOf("n2");
			const n2 = join(home, ".pi-gateway", "n2");
			const gateway = gatewaysOf(n2);
			expect(gateway).toHaveLength(1);

			const { script, groups: shown } = scriptOf({
				...(restartBlock as NonNullable<typeof restartBlock>),
				code: ported(restartBlock?.code ?? ""),
			});
			const restarted = await run(script);
			expect(restarted.code, restarted.err).toBe(0);
			const outputs = restarted.out.split(`${outputMark}\n`);
			shown.forEach((group, i) => {
				expect(fits(outputs[i] ?? "", group), `output ${i + 1}: ${outputs[i]}\n--- shown\n${group}`).toBe(true);
			});
			expect(pidOf("n2")).not.toBe(before);
			expect(() => process.kill(before, 0)).toThrow();
			// The gateway itself stopped (the signal reached it, not only npm) and a new one serves n2.
			expect(() => process.kill(gateway[0] as number, 0)).toThrow();
			const now = gatewaysOf(n2);
			expect(now).toHaveLength(1);
			expect(now).not.toEqual(gateway);
			// Rejoined: each node forwards to the other (a forwarded request's MAC is checked under the secret).
			await until("n2 listed by n1", async () =>
				JSON.stringify((await api(ports.n1, "/v1/info")).body).includes('"n2"'),
			);
			const through = await api(ports.n2, `/v1/sessions/${id}/messages`);
			expect(through.status).toBe(200);
			expect(JSON.stringify(through.body)).toContain("before the restart");
			const other = (await api(ports.n2, "/v1/sessions", { method: "POST", body: "{}" })).body.id as string;
			expect((await api(ports.n1, `/v1/sessions/${other}`)).body).toMatchObject({ id: other, node: "n2" });
		}, 120_000);
	},
);
