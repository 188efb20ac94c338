import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ConfigInput } from "../../src/config.ts";
import { type Gateway, startGateway } from "../../src/server.ts";
import { assertConforms } from "./openapi-validate.ts";

export const fixtures = resolve(import.meta.dirname, "../fixtures");

export interface TestGateway extends Gateway {
	root: string;
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
	stop(): Promise<void>;
}

/** A gateway on 127.0.0.1:0 with its own workspace, data dir and pi config dir, all temporary. */
export async function startTestGateway(overrides: Partial<ConfigInput> = {}): Promise<TestGateway> {
	const root = mkdtempSync(join(tmpdir(), "pi-gateway-test-"));
	const workspace = join(root, "workspace");
	mkdirSync(workspace);
	mkdirSync(join(root, "agent"));
	const gateway = await startGateway({
		host: "127.0.0.1",
		port: 0,
		workspaceRoot: workspace,
		dataDir: join(root, "data"),
		piAgentDir: join(root, "agent"),
		logLevel: "silent",
		...overrides,
	});
	const withAuth = (init: RequestInit["headers"]) => {
		const headers = new Headers(init);
		if (gateway.config.token && !headers.has("authorization"))
			headers.set("authorization", `Bearer ${gateway.config.token}`);
		return headers;
	};
	const rawFetch: TestGateway["fetch"] = (path, init = {}) =>
		fetch(path instanceof URL ? path : gateway.url + path, { ...init, headers: withAuth(init.headers) });
	const api = specCheckedApi(gateway.url, withAuth);
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
		async stop() {
			await gateway.close();
			rmSync(root, { recursive: true, force: true });
		},
	};
}

/**
 * JSON in and out against `base`, headers through `withAuth`; every answer is checked against
 * openapi.yaml (status, content type, JSON body): a lying spec fails the test.
 */
export function specCheckedApi(
	base: string,
	withAuth: (headers: RequestInit["headers"]) => Headers,
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
		assertConforms(init.method ?? "GET", path, res.status, res.headers.get("content-type"), parsed);
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
	return {
		path,
		text,
		commands: () =>
			text()
				.split("\n")
				.filter(Boolean)
				.map((l) => JSON.parse(l)),
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
