/**
 * What the cluster benchmarks share: one embedded PostgreSQL (test/helpers/postgres.ts), gateway
 * nodes as their own processes (test/helpers/cluster.ts), a fresh database per benchmark, and
 * the promise that every process started here is stopped again, also when a benchmark throws.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type ClusterNode, startNode } from "../test/helpers/cluster.ts";
import { startTestPostgres, type TestPostgres } from "../test/helpers/postgres.ts";
import { keepCompileCache, now, percentile, procStats, seedCompileCache, settleMs } from "./lib.ts";

const gcOnSignal = join(import.meta.dirname, "gc-on-signal.cjs");
export const ms = (ns: bigint) => Number(ns) / 1e6;
export const sleep = (milliseconds: number) => new Promise((r) => setTimeout(r, milliseconds));

export interface NodeSpec {
	leaseTtlMs?: number;
	extra?: string[];
	/** false: the default layout (a data dir per node, no shared --workspace-root). */
	sharedWorkspace?: boolean;
}

export class BenchCluster {
	readonly token = randomBytes(24).toString("base64url");
	readonly #server: TestPostgres;
	readonly #root = mkdtempSync(join(tmpdir(), "pi-bench-cluster-"));
	readonly #nodes = new Set<ClusterNode>();
	#names = 0;

	private constructor(server: TestPostgres) {
		this.#server = server;
	}

	static async start(): Promise<BenchCluster> {
		return new BenchCluster(await startTestPostgres());
	}

	database(): Promise<string> {
		return this.#server.freshDatabase();
	}

	/** Starts a node; `startMs` is process spawn to its "listening" log line. Names are unique per run. */
	async node(name: string, databaseUrl: string, spec: NodeSpec = {}): Promise<{ node: ClusterNode; startMs: number }> {
		const t0 = now();
		const unique = `${name}-${++this.#names}`;
		// The smoke pass's carried compile cache (lib.ts), in the folder startNode makes its data dir.
		seedCompileCache(join(this.#root, unique, "data"));
		// startNode spawns before its first await: the node (only) gets the GC preload.
		const inherited = process.env.NODE_OPTIONS;
		process.env.NODE_OPTIONS = [inherited, "--expose-gc", `--require "${gcOnSignal}"`].filter(Boolean).join(" ");
		const starting = startNode({
			name: unique,
			databaseUrl,
			root: this.#root,
			token: this.token,
			leaseTtlMs: spec.leaseTtlMs ?? 10_000,
			extra: spec.extra,
			sharedWorkspace: spec.sharedWorkspace,
		});
		if (inherited === undefined) delete process.env.NODE_OPTIONS;
		else process.env.NODE_OPTIONS = inherited;
		const node = await starting;
		const startMs = ms(now() - t0);
		this.#nodes.add(node);
		return { node, startMs };
	}

	/** SIGKILL, as a crash; waits until the process is gone. */
	async kill(node: ClusterNode): Promise<void> {
		node.signal("SIGKILL");
		await node.exited;
		this.#nodes.delete(node);
	}

	/** SIGTERM (an orderly stop: its sessions are hibernated and given back), SIGKILL after 20 s. */
	async stop(node: ClusterNode): Promise<void> {
		const late = setTimeout(() => node.signal("SIGKILL"), 20_000);
		try {
			await node.stop();
			keepCompileCache(node.dataDir);
		} finally {
			clearTimeout(late);
			this.#nodes.delete(node);
		}
	}

	async stopAll(): Promise<void> {
		await Promise.all([...this.#nodes].map((n) => this.stop(n)));
	}

	/** Every node, then PostgreSQL, then the nodes' folders. */
	async close(): Promise<void> {
		try {
			await this.stopAll();
		} finally {
			await this.#server.stop();
			rmSync(this.#root, { recursive: true, force: true });
		}
	}

	/** One HTTP exchange with the cluster's token; `ms` is request sent to body read. */
	async call(
		node: ClusterNode,
		method: string,
		path: string,
		body?: unknown,
	): Promise<{ status: number; json: any; ms: number; bytes: number; retryAfter: string | null }> {
		const t0 = now();
		const res = await node.fetch(path, {
			method,
			headers: body === undefined ? {} : { "content-type": "application/json" },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await res.text();
		const elapsed = ms(now() - t0);
		let json: any;
		try {
			json = text ? JSON.parse(text) : undefined;
		} catch {
			json = text;
		}
		return { status: res.status, json, ms: elapsed, bytes: text.length, retryAfter: res.headers.get("retry-after") };
	}

	/** Like call(), but any status but the expected one is an error. */
	async ok(node: ClusterNode, method: string, path: string, body?: unknown, status = 200): Promise<any> {
		const res = await this.call(node, method, path, body);
		if (res.status !== status)
			throw new Error(`${method} ${node.name}${path}: ${res.status} ${JSON.stringify(res.json)}`);
		return res.json;
	}

	/** An SSE response through node:http (see lib.ts openSse: a reader as cheap as a pipe reader). */
	openSse(node: ClusterNode, path: string): Promise<IncomingMessage> {
		return new Promise((resolve, reject) => {
			const req = request(node.url + path, {
				headers: { authorization: `Bearer ${this.token}`, accept: "text/event-stream" },
			});
			req.once("response", resolve);
			req.once("error", reject);
			req.end();
		});
	}

	/**
	 * The node's RSS (from /proc) and used JS heap (from its own /metrics: prom-client's default
	 * metrics), after a full garbage collection (bench/gc-on-signal.cjs), so both count what is kept.
	 */
	async memory(node: ClusterNode): Promise<{ heapBytes: number; rssBytes: number }> {
		node.signal("SIGUSR2");
		await sleep(settleMs);
		const text = await (await node.fetch("/metrics")).text();
		const heap = Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(text)?.[1] ?? Number.NaN);
		return { heapBytes: heap, rssBytes: procStats(node.pid).rssBytes };
	}
}

/** One query on its own connection (the benchmarks read and seed the database directly). */
export async function sql<T extends pg.QueryResultRow = any>(url: string, text: string, params: unknown[] = []) {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		return (await client.query<T>(text, params)).rows;
	} finally {
		await client.end();
	}
}

/** Polls `check` every 100 ms until it is true (at most `timeoutMs`). */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 30_000, what = "a condition") {
	const deadline = Date.now() + timeoutMs;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await sleep(100);
	}
}

export type Row = Record<string, string | number>;

/** p50, p99 and max of a list of milliseconds. */
export function stats(values: number[]) {
	const sorted = [...values].sort((a, b) => a - b);
	return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN };
}

/** A prompt for the demo model's `echo:`, answered when its run has settled. */
export const echo = (h: BenchCluster, node: ClusterNode, id: string, text: string) =>
	h.call(node, "POST", `/v1/sessions/${id}/prompt?wait=true`, { message: `echo: ${text}` });
