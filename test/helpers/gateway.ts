import { mkdirSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pino from "pino";
import { expect } from "vitest";
import { type Gateway, startGateway } from "../../src/app/server.ts";
import type { ConfigInput } from "../../src/config/config.ts";
import { assertConforms } from "./openapi-validate.ts";

export const fixtures = resolve(import.meta.dirname, "../fixtures");

export interface TestGateway extends Gateway {
	root: string;
	/** The workspace root (<data-dir>/workspaces in the default layout, where sessions get folders of their own). */
	workspace: string;
	/**
	 * fetch against the gateway with JSON in and out; the raw Response too. Every answer is
	 * checked against openapi.yaml (status, content type, JSON body): a lying spec fails the test.
	 */
	api<T = any>(
		path: string,
		init?: RequestInit & { json?: unknown },
	): Promise<{ status: number; body: T; res: Response }>;
	/** Plain fetch against the gateway (no spec check), with its bearer token unless `authorization` is set. */
	fetch(path: string | URL, init?: RequestInit): Promise<Response>;
	/** Creates a session and returns its id. */
	session(body?: Record<string, unknown>): Promise<string>;
	/** The folder a session works in (GET /v1/sessions/{id} → cwd): where a test puts what its agent should see. */
	folder(id: string): Promise<string>;
	stop(): Promise<void>;
}

/**
 * Where the test gateway's sessions work.
 * - `default`: the layout README gives a newcomer (`npm start`): no --workspace-root, so the root is
 *   <data-dir>/workspaces and a session without cwd works in a folder of its own (an admin's
 *   `<root>/<session id>`, a key's `<root>/@<principal>/<session id>`). Every test starts here
 *   unless it is about another layout.
 * - `shared-root`: an operator's --workspace-root (<tmp>/workspace), which implies
 *   `--default-cwd root`: every session without cwd works in the root itself.
 * An explicit `workspaceRoot` override is a shared root at that path.
 */
export type Layout = "default" | "shared-root";

/**
 * For a file whose tests are not about how sessions start (nor about who may start them): no warm
 * pool. A test gateway fills the operator's default pool of two at start and refills it after
 * every create, and its stop kills what is left untaken: in a measured run of the suite, 827 of
 * 1,127 pooled pi went unused, about half a second of a core each on this machine. The pool itself,
 * the default layout and the security batteries keep the operator's pool.
 */
export const noPool = { warmPool: 0 } as const satisfies Partial<ConfigInput>;

/** `logLines`: every line the gateway logs (debug and up) is kept there, for a test that reads its log. */
export type TestGatewayOptions = Partial<ConfigInput> & { layout?: Layout; logLines?: string[] };

/**
 * A gateway on 127.0.0.1:0 with its own data dir and pi config dir, all temporary, in `layout`
 * (README's by default); `workspace` is its workspace root.
 */
export async function startTestGateway({
	layout = "default",
	logLines,
	...overrides
}: TestGatewayOptions = {}): Promise<TestGateway> {
	const root = mkdtempSync(join(tmpdir(), "pi-gateway-test-"));
	mkdirSync(join(root, "agent"));
	const shared: Partial<ConfigInput> = {};
	if (layout === "shared-root") {
		shared.workspaceRoot = join(root, "workspace");
		mkdirSync(shared.workspaceRoot);
	}
	// The gateway's errors are kept (the last 200 lines), so a 500 a test meets says what it was.
	const errors: string[] = [];
	const errorLog = pino(
		{ level: "error" },
		{
			write(line: string) {
				errors.push(line);
				if (errors.length > 200) errors.shift();
			},
		},
	);
	const gateway = await startGateway(
		{
			host: "127.0.0.1",
			port: 0,
			...shared,
			dataDir: join(root, "data"),
			piAgentDir: join(root, "agent"),
			logLevel: "silent",
			...overrides,
		},
		logLines
			? pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) })
			: overrides.logLevel === undefined
				? errorLog
				: undefined,
	).catch((error) => {
		rmSync(root, { recursive: true, force: true });
		throw error;
	});
	const workspace = gateway.config.workspaceRoot;
	const withAuth = (init: RequestInit["headers"]) => {
		const headers = new Headers(init);
		if (gateway.config.token && !headers.has("authorization"))
			headers.set("authorization", `Bearer ${gateway.config.token}`);
		return headers;
	};
	const rawFetch: TestGateway["fetch"] = (path, init = {}) =>
		fetch(path instanceof URL ? path : gateway.url + path, { ...init, headers: withAuth(init.headers) });
	const api = specCheckedApi(gateway.url, withAuth, () => errors);
	return {
		...gateway,
		root,
		workspace,
		api,
		fetch: rawFetch,
		async session(body = {}) {
			const { status, body: created } = await api("/v1/sessions", { method: "POST", json: body });
			if (status !== 201) throw new Error(`create session: ${status} ${JSON.stringify(created)}`);
			return created.id as string;
		},
		async folder(id) {
			const { status, body } = await api(`/v1/sessions/${id}`);
			if (status !== 200) throw new Error(`get session ${id}: ${status} ${JSON.stringify(body)}`);
			return body.cwd as string;
		},
		async stop() {
			await gateway.close();
			rmSync(root, { recursive: true, force: true });
		},
	};
}

/**
 * Makes the folder `entry` in each session folder the gateway makes in its root from now on
 * (README's layout: an admin's session without cwd gets a fresh `<root>/<session id>`), as soon as
 * it appears: long before the session answers 201, so before any prompt. For a client that
 * creates its own session and acts on a file in its folder (`rm -rf ./scratch`): the test then
 * checks the effect in `planted`. stop() ends the watch.
 */
export function plantInNewSessionFolders(gw: Pick<TestGateway, "workspace">, entry: string) {
	const planted: string[] = [];
	const watcher = watch(gw.workspace, (_event, name) => {
		if (!name?.startsWith("ses_") || planted.includes(join(gw.workspace, name))) return;
		try {
			mkdirSync(join(gw.workspace, name, entry));
			planted.push(join(gw.workspace, name));
		} catch {}
	});
	return { planted, stop: () => watcher.close() };
}

/**
 * JSON in and out against `base`, headers through `withAuth`; every answer is checked against
 * openapi.yaml (status, content type, JSON body): a lying spec fails the test.
 */
export function specCheckedApi(
	base: string,
	withAuth: (headers: RequestInit["headers"]) => Headers,
	errorLog?: () => string[],
): TestGateway["api"] {
	return async (path, init = {}) => {
		const headers = withAuth(init.headers);
		let body = init.body;
		if (init.json !== undefined) {
			headers.set("content-type", "application/json");
			body = JSON.stringify(init.json);
		}
		const res = await fetch(base + path, { ...init, headers, body });
		const text = await res.text();
		let parsed: unknown = text;
		try {
			parsed = text ? JSON.parse(text) : undefined;
		} catch {}
		try {
			assertConforms(init.method ?? "GET", path, res.status, res.headers.get("content-type"), parsed);
		} catch (error) {
			// A 500 is the gateway's own failure: its log line (by the problem's request id) says which.
			const requestId = (parsed as { instance?: unknown } | undefined)?.instance;
			if (res.status >= 500 && errorLog && error instanceof Error) {
				const lines = errorLog().filter((line) => typeof requestId !== "string" || line.includes(requestId));
				error.message += `\ngateway error log:\n${lines.slice(-5).join("")}`;
			}
			throw error;
		}
		return { status: res.status, body: parsed as never, res };
	};
}

/**
 * A file a recording pi appends every stdin line to (tee-pi.mjs takes it as its first argument,
 * stub-pi.mjs as `record=PATH`): what a test reads back is exactly what reached pi.
 */
export function stdinRecord(name: string) {
	const path = join(tmpdir(), `pi-stdin-${name}-${process.pid}-${Date.now()}.jsonl`);
	writeFileSync(path, "");
	const text = () => readFileSync(path, "utf8");
	const commands = () =>
		text()
			.split("\n")
			.filter(Boolean)
			.map((l) => JSON.parse(l));
	// The gateway opens every pi it starts with a `get_state` (its first id, gw_1); the warm pool starts pi
	// whenever it refills, so those lines appear in a shared record at any time.
	const opening = (c: Record<string, unknown>) =>
		c.type === "get_state" && c.id === "gw_1" && Object.keys(c).length === 2;
	return {
		path,
		text,
		commands,
		/** Marks the record now; the function returned gives what reached pi since, pi starts left out. */
		mark() {
			const before = commands().length;
			return () =>
				commands()
					.slice(before)
					.filter((c) => !opening(c));
		},
	};
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch {
		return false;
	}
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a truthy value or `ms` passes. */
export async function until<T>(
	check: () => Promise<T | undefined | false> | T | undefined | false,
	ms = 10_000,
): Promise<T> {
	const deadline = Date.now() + ms;
	for (;;) {
		const value = await check();
		if (value) return value;
		if (Date.now() > deadline) throw new Error("condition not met in time");
		await sleep(25);
	}
}

/**
 * Resolves once the session's last run has fully ended: a run's last event, run_changes, follows
 * its agent_settled once the folder is snapshotted, and reading the changes waits for that.
 */
export async function runEnded(gw: Pick<TestGateway, "api">, id: string): Promise<void> {
	await gw.api(`/v1/sessions/${id}/changes`);
}

/** A run of the demo model's bash tool (`bash: …`), waited for; its runId. */
export async function agentRun(gw: Pick<TestGateway, "api">, id: string, command: string): Promise<string> {
	const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
		method: "POST",
		json: { message: `bash: ${command}` },
	});
	expect(run.status).toBe(200);
	return run.body.runId as string;
}
