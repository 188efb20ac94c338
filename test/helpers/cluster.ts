import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { specCheckedApi } from "./gateway.ts";
import { gatewayEntry } from "./gateway-entry.ts";

/** One gateway node as its own process (as operators run it), so a test can SIGKILL, SIGSTOP or SIGTERM it. */
export interface ClusterNode {
	name: string;
	url: string;
	pid: number;
	dataDir: string;
	databaseUrl: string;
	/** Every log line it printed (pino JSON), parsed. */
	logs: Record<string, unknown>[];
	/** What it printed on stderr so far (the notices for the person at the terminal). */
	stderr(): string;
	/** JSON in and out, with the cluster's token; every answer is checked against openapi.yaml. */
	api<T = any>(
		path: string,
		init?: RequestInit & { json?: unknown },
	): Promise<{ status: number; body: T; res: Response }>;
	fetch(path: string, init?: RequestInit): Promise<Response>;
	/** Resolves when the process has exited. */
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
	signal(signal: NodeJS.Signals): void;
	/** SIGTERM, and waits for the exit. */
	stop(): Promise<void>;
}

export interface NodeOptions {
	name: string;
	databaseUrl: string;
	/** Each node gets <root>/<name>/{data,agent}; the workspace is <root>/workspace (the same code, as on any node). */
	root: string;
	/**
	 * false: the default layout of docs/cluster.md, nothing but a data dir per node (each node's
	 * folders under its own `<data-dir>/workspaces`). Default true: one `--workspace-root` shared by every node.
	 */
	sharedWorkspace?: boolean;
	token: string;
	leaseTtlMs: number;
	extra?: string[];
	/**
	 * How the node gets the database URL (with its password): the environment (the default) or a
	 * file keep it off the command line, which every process of the host can read; argv only to
	 * see the warning.
	 */
	databaseUrlVia?: "env" | "file" | "argv";
	/**
	 * The warm pool: off unless a test is about it ("default": the operator's default pool). A
	 * cluster test starts two or three nodes per test, and each would fill a pool of two that the
	 * test mostly never takes: in a measured run of the suite, 256 of the 300 pooled pi the nodes
	 * started went unused, about half a second of a core each.
	 */
	pool?: "default";
}

/** The cluster secret of a database's nodes: the same for every node of one test, never in the database. */
export const clusterSecretOf = (databaseUrl: string) =>
	createHash("sha256").update(`test cluster secret ${databaseUrl}`).digest("base64url");

export async function startNode(options: NodeOptions): Promise<ClusterNode> {
	const home = join(options.root, options.name);
	const dataDir = join(home, "data");
	mkdirSync(join(home, "agent"), { recursive: true });
	mkdirSync(join(options.root, "workspace"), { recursive: true });
	const via = options.databaseUrlVia ?? "env";
	const env: NodeJS.ProcessEnv = {
		...process.env,
		PI_GATEWAY_TOKEN: options.token,
		PI_GATEWAY_CLUSTER_SECRET: clusterSecretOf(options.databaseUrl),
	};
	const database: string[] = [];
	if (via === "env") env.PI_GATEWAY_DATABASE_URL = options.databaseUrl;
	if (via === "argv") database.push(`--database-url=${options.databaseUrl}`);
	if (via === "file") {
		const file = join(home, "database-url");
		writeFileSync(file, `${options.databaseUrl}\n`, { mode: 0o600 });
		database.push(`--database-url-file=${file}`);
	}
	const child: ChildProcess = spawn(
		process.execPath,
		[
			gatewayEntry,
			"--host=127.0.0.1",
			"--port=0",
			...database,
			`--data-dir=${dataDir}`,
			...(options.sharedWorkspace === false ? [] : [`--workspace-root=${join(options.root, "workspace")}`]),
			`--pi-agent-dir=${join(home, "agent")}`,
			`--node-name=${options.name}`,
			`--lease-ttl-ms=${options.leaseTtlMs}`,
			"--log-level=info",
			...(options.pool === "default" ? [] : ["--warm-pool=0"]),
			...(options.extra ?? []),
		],
		{ env, stdio: ["ignore", "pipe", "pipe"] },
	);
	const logs: Record<string, unknown>[] = [];
	let stderr = "";
	child.stderr?.setEncoding("utf8").on("data", (text: string) => {
		stderr += text;
	});
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
		child.once("exit", (code, signal) => done({ code, signal })),
	);
	const url = await new Promise<string>((done, fail) => {
		createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
			try {
				const entry = JSON.parse(line) as Record<string, unknown>;
				logs.push(entry);
				if (entry.msg === "pi-gateway listening") done(entry.url as string);
			} catch {}
		});
		void exited.then(({ code, signal }) =>
			fail(new Error(`node ${options.name} exited (${code ?? signal}) before listening: ${stderr}`)),
		);
	});
	const withAuth = (init: RequestInit["headers"]) => {
		const headers = new Headers(init);
		if (!headers.has("authorization")) headers.set("authorization", `Bearer ${options.token}`);
		return headers;
	};
	const node: ClusterNode = {
		name: options.name,
		url,
		pid: child.pid as number,
		dataDir,
		databaseUrl: options.databaseUrl,
		logs,
		stderr: () => stderr,
		exited,
		fetch: (path, init = {}) => fetch(url + path, { ...init, headers: withAuth(init.headers) }),
		api: specCheckedApi(url, withAuth),
		signal: (signal) => {
			try {
				process.kill(child.pid as number, signal);
			} catch {}
		},
		async stop() {
			node.signal("SIGCONT");
			node.signal("SIGTERM");
			await exited;
		},
	};
	return node;
}
