/**
 * The three agent servers of the peer benchmark (bench/peers.ts) behind one small interface:
 * start, create a session (resolves when the server says it is ready for a prompt), prompt it and
 * time the answer's deltas as a client sees them, delete it, stop. Each speaks its own protocol:
 *
 * - pi-gateway: POST /v1/sessions; POST …/prompt answers with the run's SSE stream (text_delta in
 *   message_update, done at agent_settled). Default layout, its defaults; pi gets the scripted
 *   model as a custom provider in a models.json (--pi-agent-dir, --provider, --model).
 * - opencode serve: POST /session; POST /session/:id/prompt_async, the deltas on the one /event
 *   stream (message.part.delta, done at session.idle). The model is an @ai-sdk/openai-compatible
 *   provider in OPENCODE_CONFIG_CONTENT; models.dev, plugins, updates, sharing and LSP downloads off.
 * - sandbox-agent server: one ACP server id per session (pi-acp keeps one live pi per connection:
 *   it closes the others on session/new), `initialize` + `session/new`; `session/prompt`, the
 *   deltas as session/update agent_message_chunk on that id's SSE stream, done at the prompt's
 *   response. pi-acp runs the same pi (a `pi` shim on PI_ACP_PI_COMMAND) with the same models.json.
 *
 * Over 300 lines because each adapter needs its start, its stream reader and its four verbs, and
 * keeping the three side by side is what lets a reader check they are measured alike.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineParser } from "../src/client/sse.ts";
import { bundledPiCli } from "../src/sessions/process/spawn.ts";
import { api, now, openSse, readSse, startGatewayProcess } from "./lib.ts";
import { childrenOf, processTree } from "./peers-proc.ts";
import { scriptedModelId, tokenText } from "./scripted-openai.ts";

export interface PromptTiming {
	/** Prompt sent → first text delta at the client, ms. */
	firstMs: number;
	/** Prompt sent → last text delta, ms. */
	lastMs: number;
	/** Prompt sent → the server says the run is over, ms. */
	doneMs: number;
	text: string;
}

export interface AgentServer {
	name: string;
	/** Root of the process tree charged for CPU and memory. */
	pid: number;
	create(): Promise<string>;
	prompt(session: string, tokens: number): Promise<PromptTiming>;
	remove(session: string): Promise<void>;
	stop(): Promise<void>;
	/** Anything the bench had to do for this server that a reader of the figures should know. */
	note?(): string | undefined;
}

const provider = "bench";
const ms = (from: bigint) => Number(now() - from) / 1e6;

/**
 * Times the text deltas of one answer. The first delta is the first one that carries the scripted
 * answer's first token: pi-acp sends pi's start-up banner ("pi v1.6.0 ---") as a message chunk
 * ahead of a session's first answer, and that is not the model answering.
 */
export function deltaClock() {
	const t0 = now();
	const timing: PromptTiming = { firstMs: 0, lastMs: 0, doneMs: 0, text: "" };
	return {
		timing,
		delta(text: string) {
			timing.text += text;
			if (!timing.text.includes(tokenText(1))) return;
			timing.lastMs = ms(t0);
			timing.firstMs ||= timing.lastMs;
		},
		done(): PromptTiming {
			timing.doneMs = ms(t0);
			return timing;
		},
	};
}

/** A pi agent folder whose models.json makes the scripted server pi's default model. */
export function piAgentDir(baseUrl: string): string {
	const dir = mkdtempSync(join(tmpdir(), "pi-bench-peers-agent-"));
	const model = { id: scriptedModelId, name: scriptedModelId, contextWindow: 128_000, maxTokens: 16_384 };
	const providers = { [provider]: { baseUrl, api: "openai-completions", apiKey: "bench", models: [model] } };
	writeFileSync(join(dir, "models.json"), JSON.stringify({ providers }, null, 2));
	writeFileSync(
		join(dir, "settings.json"),
		JSON.stringify({ defaultProvider: provider, defaultModel: scriptedModelId }),
	);
	return dir;
}

/**
 * Reads a text/event-stream frame by frame (data-only frames too) until closed. A stream the
 * server ends is opened again with Last-Event-ID, as an EventSource would (sandbox-agent's ACP
 * streams end now and then; its own client reconnects the same way).
 */
async function sse(url: string, onFrame: (event: string, data: string) => void): Promise<{ close(): void }> {
	let closed = false;
	let lastId: string | undefined;
	let current: ReturnType<typeof request> | undefined;
	const open = () =>
		new Promise<void>((resolve, reject) => {
			const headers: Record<string, string> = { accept: "text/event-stream" };
			if (lastId !== undefined) headers["last-event-id"] = lastId;
			const req = request(url, { headers });
			current = req;
			req.once("error", (error) => (closed ? resolve() : reject(error)));
			req.once("response", (res) => {
				if (res.statusCode !== 200) {
					res.resume();
					reject(new Error(`${url}: HTTP ${res.statusCode}`));
					return;
				}
				res.setEncoding("utf8");
				// The client's parser (src/client/sse.ts), as for the gateway's own streams.
				const parser = new LineParser(lastId === undefined ? {} : { lastEventId: lastId });
				res.on("data", (chunk: string) => {
					for (const frame of parser.feed(chunk)) {
						if (frame.lastEventId !== "") lastId = frame.lastEventId;
						onFrame(frame.event, frame.data);
					}
				});
				res.on("error", () => {});
				res.once("close", () => {
					if (!closed) setTimeout(() => open().catch(() => {}), 50);
				});
				resolve();
			});
			req.end();
		});
	await open();
	return {
		close() {
			closed = true;
			current?.destroy();
		},
	};
}

async function json(url: string, method: string, body?: unknown): Promise<any> {
	const res = await fetch(url, {
		method,
		headers: body === undefined ? {} : { "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
	return text ? JSON.parse(text) : undefined;
}

/** SIGTERM, then SIGKILL after 5 s; then whatever of the tree is left (by pid, all started by us). */
async function stopTree(child: ChildProcess): Promise<void> {
	const pids = child.pid ? processTree(child.pid).slice(1) : [];
	if (child.exitCode === null && child.signalCode === null) {
		const exited = new Promise((r) => child.once("exit", r));
		child.kill("SIGTERM");
		const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
		await exited;
		clearTimeout(timer);
	}
	for (const pid of pids)
		try {
			process.kill(pid, "SIGKILL");
		} catch {}
}

function waitForLine(child: ChildProcess, pattern: RegExp, what: string): Promise<RegExpExecArray> {
	return new Promise((resolve, reject) => {
		let seen = "";
		const timer = setTimeout(() => reject(new Error(`${what} did not start in 60 s: ${seen.slice(-300)}`)), 60_000);
		const onData = (chunk: Buffer) => {
			seen += chunk.toString("utf8");
			const match = pattern.exec(seen);
			if (match) {
				clearTimeout(timer);
				resolve(match);
			}
		};
		child.stdout?.on("data", onData);
		child.stderr?.on("data", onData);
		child.once("exit", (code) => {
			clearTimeout(timer);
			reject(new Error(`${what} exited with ${code}: ${seen.slice(-300)}`));
		});
		// A binary that cannot be run (missing, not executable) is a start that failed, not a crash of the bench.
		child.once("error", (error) => {
			clearTimeout(timer);
			reject(new Error(`${what} could not be run: ${error.message}`));
		});
	});
}

export async function startPiGateway(baseUrl: string): Promise<AgentServer> {
	const dataDir = mkdtempSync(join(tmpdir(), "pi-bench-peers-gw-"));
	const agentDir = piAgentDir(baseUrl);
	const gateway = await startGatewayProcess(
		["--data-dir", dataDir, "--pi-agent-dir", agentDir, "--provider", provider, "--model", scriptedModelId],
		{ env: { PI_OFFLINE: "1" } },
	);
	return {
		name: "pi-gateway",
		pid: gateway.pid,
		// Naming the model, as API clients do (the OpenAI routes, SDKs): served by the warm pool too.
		create: async () => (await api(`${gateway.url}/v1/sessions`, "POST", { provider, model: scriptedModelId })).id,
		async prompt(id, tokens) {
			const clock = deltaClock();
			const res = await openSse(`${gateway.url}/v1/sessions/${id}/prompt`, {
				method: "POST",
				body: { message: `tokens: ${tokens}` },
			});
			await readSse(res, (event, data) => {
				if (event === "message_update" && data.includes('"text_delta"')) {
					const update = JSON.parse(data).assistantMessageEvent;
					if (update?.type === "text_delta") clock.delta(update.delta);
				}
				return event === "agent_settled";
			});
			return clock.done();
		},
		remove: async (id) => void (await api(`${gateway.url}/v1/sessions/${id}`, "DELETE")),
		async stop() {
			await gateway.stop();
			rmSync(dataDir, { recursive: true, force: true });
			rmSync(agentDir, { recursive: true, force: true });
		},
	};
}

/** A home of its own: config, data, cache and state of a peer stay in a temporary folder. */
function tempHome(prefix: string) {
	const home = mkdtempSync(join(tmpdir(), prefix));
	return {
		home,
		env: {
			HOME: home,
			XDG_CONFIG_HOME: join(home, ".config"),
			XDG_DATA_HOME: join(home, ".local", "share"),
			XDG_CACHE_HOME: join(home, ".cache"),
			XDG_STATE_HOME: join(home, ".local", "state"),
		},
	};
}

const baseEnv = () => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: process.env.LANG ?? "C.UTF-8" });

export async function startOpencode(binary: string, baseUrl: string): Promise<AgentServer> {
	const { home, env } = tempHome("pi-bench-peers-opencode-");
	const work = join(home, "work");
	mkdirSync(work);
	const config = {
		$schema: "https://opencode.ai/config.json",
		provider: {
			[provider]: {
				npm: "@ai-sdk/openai-compatible",
				name: provider,
				options: { baseURL: baseUrl, apiKey: "bench" },
				models: { [scriptedModelId]: { name: scriptedModelId } },
			},
		},
		model: `${provider}/${scriptedModelId}`,
		small_model: `${provider}/${scriptedModelId}`,
		autoupdate: false,
		share: "disabled",
	};
	const child = spawn(binary, ["serve", "--port", "0", "--hostname", "127.0.0.1", "--pure"], {
		cwd: work,
		stdio: ["ignore", "pipe", "pipe"],
		env: {
			...baseEnv(),
			...env,
			OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
			OPENCODE_DISABLE_MODELS_FETCH: "1",
			OPENCODE_DISABLE_AUTOUPDATE: "1",
			OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
			OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
			OPENCODE_DISABLE_SHARE: "1",
		},
	});
	let url: string;
	try {
		url = (await waitForLine(child, /listening on (http:\/\/[\d.:]+)/, "opencode serve"))[1] as string;
	} catch (error) {
		await stopTree(child);
		throw error;
	}
	child.stdout?.resume();
	child.stderr?.resume();
	// One event stream for the server, handed out by session id.
	const waiters = new Map<string, (type: string, properties: any) => void>();
	const events = await sse(`${url}/event`, (_event, data) => {
		const { type, properties } = JSON.parse(data);
		const sessionId = properties?.sessionID;
		if (sessionId) waiters.get(sessionId)?.(type, properties);
	});
	return {
		name: "opencode",
		pid: child.pid as number,
		create: async () => (await json(`${url}/session`, "POST", {})).id,
		async prompt(id, tokens) {
			const clock = deltaClock();
			const done = new Promise<void>((resolve) =>
				waiters.set(id, (type, properties) => {
					if (type === "message.part.delta" && properties.field === "text") clock.delta(properties.delta);
					else if (type === "session.idle") resolve();
				}),
			);
			await json(`${url}/session/${id}/prompt_async`, "POST", { parts: [{ type: "text", text: `tokens: ${tokens}` }] });
			await done;
			waiters.delete(id);
			return clock.done();
		},
		remove: async (id) => void (await json(`${url}/session/${id}`, "DELETE")),
		async stop() {
			events.close();
			await stopTree(child);
			rmSync(home, { recursive: true, force: true });
		},
	};
}

function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const { port } = server.address() as { port: number };
			server.close(() => resolve(port));
		});
	});
}

interface AcpSession {
	sessionId: string;
	/** The pi-acp process sandbox-agent started for this ACP server id. */
	agentPid?: number;
	stream: { close(): void };
	onUpdate?: (message: any) => void;
}

export async function startSandboxAgent(binary: string, piAcp: string, baseUrl: string): Promise<AgentServer> {
	const { home, env } = tempHome("pi-bench-peers-sandbox-agent-");
	const agentDir = piAgentDir(baseUrl);
	// pi-acp runs `PI_ACP_PI_COMMAND --mode rpc …`: a shim that runs the same pi the gateway runs.
	const bin = join(home, "bin");
	mkdirSync(bin);
	const shim = join(bin, "pi");
	writeFileSync(shim, `#!/bin/sh\nexec '${process.execPath}' '${bundledPiCli()}' "$@"\n`);
	chmodSync(shim, 0o755);
	// sandbox-agent runs <data dir>/sandbox-agent/bin/agent_processes/pi-acp when it is there, else
	// it would download pi-acp from its registry (not offline).
	const launchers = join(env.XDG_DATA_HOME, "sandbox-agent", "bin", "agent_processes");
	mkdirSync(launchers, { recursive: true });
	writeFileSync(join(launchers, "pi-acp"), `#!/bin/sh\nexec '${process.execPath}' '${piAcp}' "$@"\n`);
	chmodSync(join(launchers, "pi-acp"), 0o755);
	const port = await freePort();
	const child = spawn(
		binary,
		["server", "--no-token", "--no-telemetry", "--host", "127.0.0.1", "--port", String(port)],
		{
			cwd: home,
			stdio: ["ignore", "pipe", "pipe"],
			env: {
				...baseEnv(),
				...env,
				PATH: `${bin}:${baseEnv().PATH}`,
				PI_ACP_PI_COMMAND: shim,
				PI_CODING_AGENT_DIR: agentDir,
				PI_OFFLINE: "1",
			},
		},
	);
	child.stdout?.resume();
	child.stderr?.resume();
	const url = `http://127.0.0.1:${port}`;
	const exited = new Promise<never>((_, reject) =>
		child.once("exit", (code) => reject(new Error(`sandbox-agent exited with ${code}`))),
	);
	exited.catch(() => {});
	for (let i = 0; ; i++) {
		const ok = await Promise.race([
			fetch(`${url}/v1/health`).then(
				(r) => r.ok,
				() => false,
			),
			exited,
		]).catch(() => {
			throw new Error("sandbox-agent exited before it answered /v1/health");
		});
		if (ok) break;
		if (i > 600) {
			await stopTree(child);
			throw new Error("sandbox-agent did not answer /v1/health in 60 s");
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	const sessions = new Map<string, AcpSession>();
	let leftBehind = 0;
	let nextServer = 0;
	let nextId = 0;
	const rpc = async (server: string, method: string, params: object, query = "") => {
		const id = ++nextId;
		const reply = await json(`${url}/v1/acp/${server}${query}`, "POST", { jsonrpc: "2.0", id, method, params });
		if (reply?.error) throw new Error(`${method}: ${JSON.stringify(reply.error).slice(0, 300)}`);
		return { id, result: reply?.result };
	};
	return {
		name: "sandbox-agent",
		pid: child.pid as number,
		async create() {
			const server = `bench-${++nextServer}`;
			const before = new Set(childrenOf(child.pid as number));
			await rpc(server, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=pi");
			const session: Partial<AcpSession> = {};
			session.agentPid = childrenOf(child.pid as number).find((pid) => !before.has(pid));
			session.stream = await sse(`${url}/v1/acp/${server}`, (_event, data) => session.onUpdate?.(JSON.parse(data)));
			const cwd = join(home, server);
			mkdirSync(cwd);
			session.sessionId = (await rpc(server, "session/new", { cwd, mcpServers: [] })).result.sessionId;
			sessions.set(server, session as AcpSession);
			return server;
		},
		async prompt(server, tokens) {
			const session = sessions.get(server) as AcpSession;
			const clock = deltaClock();
			let promptId = -1;
			let answered: () => void = () => {};
			const done = new Promise<void>((resolve) => (answered = resolve));
			session.onUpdate = (message) => {
				const update = message?.params?.update;
				if (message?.method === "session/update" && update?.sessionUpdate === "agent_message_chunk")
					clock.delta(update.content?.text ?? "");
				else if (message?.id !== undefined && message.id === promptId) answered();
			};
			const prompt = [{ type: "text", text: `tokens: ${tokens}` }];
			// The response also comes on the stream, after the last update: that is where the run ends.
			const posted = rpc(server, "session/prompt", { sessionId: session.sessionId, prompt });
			promptId = nextId;
			await posted;
			await done;
			session.onUpdate = undefined;
			return clock.done();
		},
		async remove(server) {
			const session = sessions.get(server);
			sessions.delete(server);
			// sandbox-agent 0.4.2's DELETE did not answer here (its own client gives it 2 s and moves
			// on), and pi-acp and its pi stayed: after 2 s the bench ends them itself, so a round does
			// not leave them to the next one.
			await fetch(`${url}/v1/acp/${server}`, { method: "DELETE", signal: AbortSignal.timeout(2000) }).catch(() => {});
			session?.stream.close();
			if (session?.agentPid && processTree(session.agentPid).length > 0) {
				leftBehind++;
				for (const pid of processTree(session.agentPid).reverse())
					try {
						process.kill(pid, "SIGKILL");
					} catch {}
			}
		},
		note: () =>
			leftBehind > 0
				? `sandbox-agent: DELETE /v1/acp/{id} had not ended pi-acp and pi after 2 s for ${leftBehind} session(s); the bench ended them (SIGKILL)`
				: undefined,
		async stop() {
			for (const session of sessions.values()) session.stream.close();
			await stopTree(child);
			rmSync(home, { recursive: true, force: true });
			rmSync(agentDir, { recursive: true, force: true });
		},
	};
}
