import { FrameTooLarge, readFrames } from "./sse.ts";

/**
 * The few gateway operations the bridge uses, over HTTP only (the bridge runs on the editor's
 * machine, the gateway elsewhere). Each method is one operation of openapi.yaml; errors are the
 * gateway's problem+json, thrown as GatewayProblem.
 */
export class GatewayProblem extends Error {
	readonly status: number;
	readonly code: string;
	constructor(status: number, code: string, detail: string) {
		super(`${status} ${code}: ${detail}`);
		this.status = status;
		this.code = code;
	}
}

/** One event of a session's stream: its sequence number (absent on stream_open) and pi's or the gateway's JSON. */
export interface StreamedEvent {
	id?: number;
	type: string;
	[key: string]: unknown;
}

export interface SessionView {
	id: string;
	cwd: string;
	status: string;
	model: { provider: string; id: string } | null;
	thinkingLevel: string | null;
	lastEventId: number;
}

export interface Model {
	id: string;
	name?: string;
	provider: string;
	reasoning?: boolean;
}

export interface GatewayClientOptions {
	url: string;
	token: string | undefined;
	/** Where logs go (stderr): never stdout, which carries only ACP. */
	log: (line: string) => void;
	/** How long a cut stream keeps being retried before the run is given up (ms). */
	reconnectForMs?: number;
	fetch?: typeof fetch;
}

export class GatewayClient {
	readonly #base: string;
	readonly #token: string | undefined;
	readonly #log: (line: string) => void;
	readonly #reconnectForMs: number;
	readonly #fetch: typeof fetch;

	constructor(options: GatewayClientOptions) {
		this.#base = options.url.replace(/\/+$/, "");
		this.#token = options.token;
		this.#log = options.log;
		this.#reconnectForMs = options.reconnectForMs ?? 60_000;
		this.#fetch = options.fetch ?? fetch;
	}

	async #request(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<Response> {
		const headers = new Headers(init.headers);
		if (this.#token) headers.set("authorization", `Bearer ${this.#token}`);
		if (body !== undefined) headers.set("content-type", "application/json");
		const res = await this.#fetch(this.#base + path, {
			...init,
			method,
			headers,
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		if (res.ok) return res;
		const text = await res.text();
		let problem: { code?: string; detail?: string } = {};
		try {
			problem = JSON.parse(text);
		} catch {}
		throw new GatewayProblem(res.status, problem.code ?? "http_error", problem.detail ?? text.slice(0, 500));
	}

	async #json<T>(method: string, path: string, body?: unknown): Promise<T> {
		const res = await this.#request(method, path, body);
		return (res.status === 204 ? undefined : await res.json()) as T;
	}

	/** POST /v1/sessions (sessionsCreate). */
	createSession(body: Record<string, unknown>): Promise<SessionView> {
		return this.#json("POST", "/v1/sessions", body);
	}
	/** GET /v1/sessions/{id} (sessionsGet). */
	getSession(id: string): Promise<SessionView> {
		return this.#json("GET", `/v1/sessions/${encodeURIComponent(id)}`);
	}
	/** POST /v1/sessions/{id}/resume (sessionsResume): pi started again on the session's file, if it was stopped. */
	resume(id: string): Promise<SessionView> {
		return this.#json("POST", `/v1/sessions/${encodeURIComponent(id)}/resume`);
	}
	/** GET …/messages (sessionsGetMessages). */
	async messages(id: string): Promise<unknown[]> {
		return (await this.#json<{ messages: unknown[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/messages`))
			.messages;
	}
	/** GET …/slash-commands (sessionsGetSlashCommands). */
	async slashCommands(id: string): Promise<{ name: string; description?: string }[]> {
		return (
			await this.#json<{ commands: { name: string; description?: string }[] }>(
				"GET",
				`/v1/sessions/${encodeURIComponent(id)}/slash-commands`,
			)
		).commands;
	}
	/** GET …/models (sessionsGetModels). */
	async models(id: string): Promise<Model[]> {
		return (await this.#json<{ models: Model[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/models`)).models;
	}
	/** GET …/thinking-levels (sessionsGetThinkingLevels). */
	async thinkingLevels(id: string): Promise<string[]> {
		return (await this.#json<{ levels: string[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/thinking-levels`))
			.levels;
	}
	/** PUT …/model (sessionsSetModel). */
	async setModel(id: string, provider: string, modelId: string): Promise<void> {
		await this.#json("PUT", `/v1/sessions/${encodeURIComponent(id)}/model`, { provider, modelId });
	}
	/** PUT …/thinking-level (sessionsSetThinkingLevel). */
	async setThinkingLevel(id: string, level: string): Promise<void> {
		await this.#json("PUT", `/v1/sessions/${encodeURIComponent(id)}/thinking-level`, { level });
	}
	/** POST …/abort (sessionsAbort): also dismisses the session's pending dialogs. */
	async abort(id: string): Promise<void> {
		await this.#json("POST", `/v1/sessions/${encodeURIComponent(id)}/abort`, {});
	}
	/** GET …/approvals/{approvalId} (approvalsGet). */
	approval(id: string, approvalId: string): Promise<{ id: string; status: string }> {
		return this.#json("GET", `/v1/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(approvalId)}`);
	}
	/** POST …/approvals/{approvalId} (approvalsAnswer); 409 when another answer won, 410 when it is gone. */
	async answer(id: string, approvalId: string, answer: Record<string, unknown>): Promise<void> {
		await this.#json(
			"POST",
			`/v1/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(approvalId)}`,
			answer,
		);
	}

	/**
	 * A run, streamed: `POST …/prompt` with `Accept: text/event-stream` (the gateway subscribes
	 * before it sends the prompt, so nothing of the run is missed), each event to `onEvent` until
	 * it returns true. When the connection drops, it reconnects to `GET …/events` with
	 * `Last-Event-ID` (or `?after=` the stream's position, before any event arrived): nothing lost,
	 * nothing repeated. A refused prompt throws the gateway's problem before any event.
	 */
	async run(
		id: string,
		body: Record<string, unknown>,
		onEvent: (event: StreamedEvent) => boolean | Promise<boolean>,
		signal: AbortSignal,
	): Promise<void> {
		const path = `/v1/sessions/${encodeURIComponent(id)}`;
		let res: Response | undefined = await this.#request("POST", `${path}/prompt`, body, {
			headers: { accept: "text/event-stream" },
			signal,
		});
		let position: number | undefined;
		let lastId: number | undefined;
		let cutAt: number | undefined;
		for (;;) {
			try {
				if (!res) {
					const headers: Record<string, string> = { accept: "text/event-stream" };
					if (lastId !== undefined) headers["last-event-id"] = String(lastId);
					const query = lastId === undefined && position !== undefined ? `?after=${position}` : "";
					res = await this.#request("GET", `${path}/events${query}`, undefined, { headers, signal });
				}
				if (!res.body) throw new Error("no body");
				for await (const frame of readFrames(res.body)) {
					cutAt = undefined;
					let event: StreamedEvent;
					try {
						event = JSON.parse(frame.data);
					} catch {
						continue;
					}
					if (frame.id !== undefined && /^\d+$/.test(frame.id)) {
						const seq = Number(frame.id);
						// A reconnect never repeats, but a stream that does must not double an update.
						if (lastId !== undefined && seq <= lastId) continue;
						lastId = seq;
						event.id = seq;
					}
					if (event.type === "stream_open" && typeof event.after === "number") position ??= event.after;
					if (event.type === "error")
						throw new GatewayProblem(Number(event.status), String(event.code), String(event.detail));
					if (event.type === "dropped" && typeof event.resumeFrom === "number") lastId = event.resumeFrom;
					if (await onEvent(event)) {
						await res.body.cancel().catch(() => {});
						return;
					}
					if (event.type === "session_exit" && event.resumable !== true) return;
				}
				throw new Error("the stream ended before the run settled");
			} catch (error) {
				// A frame past the cap would come again on a reconnect: the run fails with it.
				if (signal.aborted || error instanceof GatewayProblem || error instanceof FrameTooLarge) throw error;
				cutAt ??= Date.now();
				if (Date.now() - cutAt > this.#reconnectForMs) throw error;
				this.#log(
					`pi-gateway acp: event stream cut (${(error as Error).message}); reconnecting after ${lastId ?? position}`,
				);
				res = undefined;
				await new Promise((r) => setTimeout(r, 250));
			}
		}
	}
}
