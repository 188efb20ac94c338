import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { gatewayEntry } from "./gateway-entry.ts";

const sources = resolve(import.meta.dirname, "../../src/main.ts");

/** A gateway as its own OS process (gateway-entry.ts: the bin's bundle or `node src/main.ts`), so a test can SIGKILL or SIGTERM it. */
export interface GatewayProcess {
	child: ChildProcess;
	url: string;
	token: string;
	/** What it printed on stderr so far. */
	stderr(): string;
	/** Its JSON log lines so far, parsed. */
	logs: Record<string, unknown>[];
	exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
	api(path: string, init?: { method?: string; json?: unknown }): Promise<{ status: number; body: any; res: Response }>;
	fetch(path: string, init?: RequestInit): Promise<Response>;
}

export interface GatewayProcessOptions {
	/** Holds data/, workspace/ and agent/ (the same folder on a restart: the same data dir). */
	root: string;
	/** 0 for any; a restart that clients must find again passes the port of the first start. */
	port: number;
	/** PI_GATEWAY_TOKEN; without it the gateway makes its own token file, read once it listens. */
	token?: string;
	/** The token the gateway has from elsewhere (a config file's `token:`), for this side's requests. */
	clientToken?: string;
	extra?: string[];
	/**
	 * README's `npm start`: no data-dir, workspace or agent-dir flags, HOME = `root` (so the data dir
	 * is `<root>/.pi-gateway`, the workspace root in it).
	 */
	readme?: boolean;
	/** `node src/main.ts`, as `npm start` runs it, whatever gateway-entry.ts picks. */
	sources?: boolean;
	/** Over this process's environment (a PATH without bwrap: test/helpers/host.ts bareMachinePath). */
	env?: Record<string, string>;
}

/** Starts a gateway process and resolves once it logs "pi-gateway listening"; README's layout runs `npm start`'s `node src/main.ts`. */
export async function launchGateway(options: GatewayProcessOptions): Promise<GatewayProcess> {
	const layout = options.readme
		? []
		: [
				`--data-dir=${join(options.root, "data")}`,
				`--workspace-root=${join(options.root, "workspace")}`,
				`--pi-agent-dir=${join(options.root, "agent")}`,
				"--shutdown-grace-ms=1000",
			];
	if (!options.readme)
		for (const dir of ["workspace", "agent"]) mkdirSync(join(options.root, dir), { recursive: true });
	const args = [
		options.readme || options.sources ? sources : gatewayEntry,
		"--host=127.0.0.1",
		`--port=${options.port}`,
		...layout,
		"--log-level=info",
		...(options.extra ?? []),
	];
	const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
	if (options.readme) env.HOME = options.root;
	if (options.token) env.PI_GATEWAY_TOKEN = options.token;
	else delete env.PI_GATEWAY_TOKEN;
	const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
	let stderr = "";
	child.stderr?.setEncoding("utf8").on("data", (text: string) => {
		stderr += text;
	});
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
		child.once("exit", (code, signal) => done({ code, signal })),
	);
	const logs: Record<string, unknown>[] = [];
	const url = await new Promise<string>((done, fail) => {
		createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
			try {
				const entry = JSON.parse(line) as Record<string, unknown>;
				logs.push(entry);
				if (entry.msg === "pi-gateway listening") done(entry.url as string);
			} catch {}
		});
		void exited.then(({ code, signal }) => fail(new Error(`gateway exited (${code ?? signal}): ${stderr}`)));
	});
	const listening = logs.find((entry) => entry.msg === "pi-gateway listening");
	let token: string;
	try {
		token = options.token ?? options.clientToken ?? readFileSync(listening?.tokenFile as string, "utf8").trim();
	} catch (error) {
		// A test that cannot talk to it must not leave it (and its pi children) running.
		child.kill("SIGKILL");
		throw error;
	}
	const headers = (init?: RequestInit["headers"]) => {
		const h = new Headers(init);
		if (!h.has("authorization")) h.set("authorization", `Bearer ${token}`);
		return h;
	};
	const raw: GatewayProcess["fetch"] = (path, init = {}) =>
		fetch(url + path, { ...init, headers: headers(init.headers) });
	const api: GatewayProcess["api"] = async (path, init = {}) => {
		const res = await raw(path, {
			method: init.method ?? "GET",
			headers: init.json === undefined ? {} : { "content-type": "application/json" },
			body: init.json === undefined ? undefined : JSON.stringify(init.json),
		});
		const text = await res.text();
		let body: unknown = text;
		try {
			body = text ? JSON.parse(text) : undefined;
		} catch {}
		return { status: res.status, body, res };
	};
	return { child, url, token, stderr: () => stderr, logs, exited, api, fetch: raw };
}

/** Kills what is still running of `gateways` (a failed test's cleanup), by pid. */
export function killAll(gateways: GatewayProcess[]): void {
	for (const gw of gateways) if (gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill("SIGKILL");
}
