import { AllEventsStream } from "./all-events.ts";
import { Approvals } from "./approvals.ts";
import { type ClientOptions, Transport } from "./http.ts";
import type { paths } from "./schema.ts";
import { commandEvents, EventStream, runEnd, runLost } from "./streams.ts";
import { ToolCalls } from "./tool-calls.ts";
import type { Method, OptionalArgs, PathsOf, RequestOptions, ResponseData, Schemas } from "./types.ts";
import { Workspace } from "./workspace.ts";

type Signal = { signal?: AbortSignal };
type RunKind = "prompt" | "steer" | "follow-up";

export interface EventsOptions extends Signal {
	/** Replay the log after this sequence number first (0: the whole log); default: live from now. */
	after?: number;
	/** Only these event types (`stream_open`, `gap`, `dropped`, `session_exit` always come). */
	types?: string[];
	/**
	 * After a `session_exit` that says `resumable: true` (the session hibernated), keep following:
	 * reconnect until it runs again (default false: the iteration ends with that frame).
	 */
	followResumes?: boolean;
}

/** Paging and filters of `GET /v1/sessions`, as the spec declares them. */
export type ListSessionsOptions = NonNullable<paths["/v1/sessions"]["get"]["parameters"]["query"]> & Signal;

/**
 * pi-gateway over HTTP. `request()` reaches every operation of the spec, typed from it; the named
 * methods cover the common flow; streams are async iterators that reconnect on their own.
 */
export class PiGateway {
	readonly approvals: Approvals;
	/** Client tools: `toolCalls.run(id, {message}, {lookup_price: (args) => …})` answers the calls of a run. */
	readonly toolCalls: ToolCalls;
	readonly workspace: Workspace;
	readonly #http: Transport;

	constructor(options: ClientOptions) {
		this.#http = new Transport(options);
		this.approvals = new Approvals(this.#http);
		this.toolCalls = new ToolCalls(this.#http);
		this.workspace = new Workspace(this.#http);
	}

	/**
	 * Any operation, by method and path as the spec writes them: `request("POST",
	 * "/v1/sessions/{id}/steer", { path: { id }, body: { message } })`. Resolves to the JSON of
	 * the 2xx answer (undefined for 204); a problem+json answer is thrown as a GatewayError.
	 */
	request<M extends Method, P extends PathsOf<M>>(
		method: M,
		path: P,
		...[options]: OptionalArgs<RequestOptions<P, M>>
	): Promise<ResponseData<P, M>> {
		return this.#http.json(method, path, (options ?? {}) as never);
	}

	/** The same, answering the raw Response (for bytes and streams); still throws GatewayError outside 2xx. */
	raw<M extends Method, P extends PathsOf<M>>(
		method: M,
		path: P,
		...[options]: OptionalArgs<RequestOptions<P, M>>
	): Promise<Response> {
		return this.#http.send(method, path, (options ?? {}) as never);
	}

	createSession(body: Schemas["CreateSession"] = {}, options: Signal = {}): Promise<Schemas["Session"]> {
		return this.#http.json("POST", "/v1/sessions", { body, ...options });
	}

	/**
	 * A new session of the caller's from this one: its conversation up to `entryId` (inclusive; all of
	 * it without one) and a copy of its folder. The original is only read. `idempotencyKey` makes a
	 * retry answer the same new session.
	 */
	forkSession(
		id: string,
		body: Schemas["ForkSession"] = {},
		options: Signal & { idempotencyKey?: string } = {},
	): Promise<Schemas["ForkedSession"]> {
		const headers = options.idempotencyKey === undefined ? undefined : { "idempotency-key": options.idempotencyKey };
		return this.#http.json("POST", "/v1/sessions/{id}/fork-session", {
			path: { id },
			body,
			headers,
			signal: options.signal,
		});
	}

	getSession(id: string, options: Signal = {}): Promise<Schemas["Session"]> {
		return this.#http.json("GET", "/v1/sessions/{id}", { path: { id }, ...options });
	}

	/** One page of sessions, oldest first (100 unless `limit` says otherwise); `nextCursor` goes on. */
	listSessions(options: ListSessionsOptions = {}): Promise<Schemas["SessionList"]> {
		const { signal, ...query } = options;
		return this.#http.json("GET", "/v1/sessions", { query, signal });
	}

	/** Every session that matches, page after page (`limit` is the page size): `for await (const s of …)`. */
	async *allSessions(options: Omit<ListSessionsOptions, "cursor"> = {}): AsyncGenerator<Schemas["Session"]> {
		let cursor: string | undefined;
		do {
			const page = await this.listSessions({ ...options, cursor });
			yield* page.sessions;
			cursor = page.nextCursor ?? undefined;
		} while (cursor !== undefined);
	}

	/** Stops pi (gracefully) and forgets the session. */
	deleteSession(id: string, options: Signal = {}): Promise<void> {
		return this.#http.json("DELETE", "/v1/sessions/{id}", { path: { id }, ...options });
	}

	/** The session's budget and what its runs used (`usedTokens`, `usedCostUsd`, `exhausted`). */
	budget(id: string, options: Signal = {}): Promise<Schemas["Budget"]> {
		return this.#http.json("GET", "/v1/sessions/{id}/budget", { path: { id }, ...options });
	}

	/** Replaces the budget's limits (one left out is removed); past one, run commands fail with `budget_exhausted`. */
	setBudget(id: string, body: Schemas["SessionBudget"], options: Signal = {}): Promise<Schemas["Budget"]> {
		return this.#http.json("PUT", "/v1/sessions/{id}/budget", { path: { id }, body, ...options });
	}

	/** Sends a prompt and answers once pi accepted it (202): follow the run on `events()`. */
	prompt(id: string, body: Schemas["PromptBody"], options: Signal = {}): Promise<Schemas["RunAccepted"]> {
		return this.#http.json("POST", "/v1/sessions/{id}/prompt", { path: { id }, body, ...options });
	}

	/**
	 * Wait mode: answers once the run settled (RunResult: its messages, last text, stop reason),
	 * or RunAccepted when `seconds` (default: the gateway's limit) ran out first or a dialog holds
	 * pi's answer (`disposition: awaiting_approval`). When `signal` aborts, the run is cancelled too
	 * (`Prefer: cancel-on-disconnect`: the gateway cancels it as soon as this call goes away);
	 * `cancelOnAbort: false` leaves it going.
	 */
	promptAndWait(
		id: string,
		body: Schemas["PromptBody"],
		options: Signal & { seconds?: number; cancelOnAbort?: boolean } = {},
	): Promise<Schemas["RunResult"] | Schemas["RunAccepted"]> {
		const wait = options.seconds === undefined ? "wait" : `wait=${options.seconds}`;
		const prefer = options.cancelOnAbort === false ? wait : `${wait}, cancel-on-disconnect`;
		return this.#http.json("POST", "/v1/sessions/{id}/prompt", {
			path: { id },
			body,
			headers: { prefer },
			signal: options.signal,
		});
	}

	/**
	 * A prompt's run as it happens, from pi's answer through the `agent_settled` that ends it. A run
	 * that died with its gateway or node (an unclean stop) ends the iteration with a RunLostError.
	 */
	promptStream(id: string, body: Schemas["PromptBody"], options: Signal = {}): EventStream {
		return this.#runStream("prompt", id, body, options.signal);
	}

	steerStream(id: string, body: Schemas["SteerBody"], options: Signal = {}): EventStream {
		return this.#runStream("steer", id, body, options.signal);
	}

	followUpStream(id: string, body: Schemas["FollowUpBody"], options: Signal = {}): EventStream {
		return this.#runStream("follow-up", id, body, options.signal);
	}

	abort(id: string, options: Signal = {}): Promise<void> {
		return this.#http.json("POST", "/v1/sessions/{id}/abort", { path: { id }, ...options });
	}

	/** Cancels one run: aborted if it is in progress, taken out of the queue if it has not reached pi. */
	cancelRun(id: string, runId: string, options: Signal = {}): Promise<Schemas["RunCancelled"]> {
		return this.#http.json("POST", "/v1/sessions/{id}/runs/{runId}/cancel", { path: { id, runId }, ...options });
	}

	/** Runs a shell command in pi (its output joins the next prompt's context). */
	bash(id: string, body: Schemas["BashBody"], options: Signal = {}): Promise<Schemas["BashResult"]> {
		return this.#http.json("POST", "/v1/sessions/{id}/bash", { path: { id }, body, ...options });
	}

	/** The same, streamed: `bash_execution_update` events as output arrives, then pi's `response`. */
	bashStream(id: string, body: Schemas["BashBody"], options: Signal = {}): EventStream {
		const own = commandEvents();
		return new EventStream(
			this.#http,
			{
				sessionId: id,
				...own,
				cleanEndIsFinal: true,
				open: (signal) => this.#post(id, "bash/stream", body, signal),
				resume: (after, signal) => this.#post(id, "bash/stream", body, signal, after),
			},
			options.signal,
		);
	}

	lastAssistantText(id: string, options: Signal = {}): Promise<Schemas["LastAssistantText"]> {
		return this.#http.json("GET", "/v1/sessions/{id}/last-assistant-text", { path: { id }, ...options });
	}

	/** The session's events; ends after `session_exit` (see `followResumes`). */
	events(id: string, options: EventsOptions = {}): EventStream {
		const types = options.types?.join(",");
		const ends = (event: { type: string; resumable?: unknown }) =>
			event.type === "session_exit" && !(options.followResumes && event.resumable === true);
		const open = (signal: AbortSignal | undefined) =>
			this.#http.send("GET", "/v1/sessions/{id}/events", {
				path: { id },
				query: { after: options.after, types },
				headers: { accept: "text/event-stream" },
				signal,
			});
		return new EventStream(this.#http, { sessionId: id, types, ends, open, cleanEndIsFinal: false }, options.signal);
	}

	/** Every session's live events (for dashboards); after a cut, what was missed is read back per session. */
	allEvents(options: Signal & { types?: string[] } = {}): AllEventsStream {
		return new AllEventsStream(this.#http, options.types?.join(","), options.signal);
	}

	#runStream(kind: RunKind, id: string, body: object, signal: AbortSignal | undefined): EventStream {
		return new EventStream(
			this.#http,
			{
				sessionId: id,
				ends: runEnd(),
				fails: runLost,
				cleanEndIsFinal: true,
				open: (s) => this.#post(id, `${kind}/stream`, body, s),
				// A cut is resumed by the same POST with Last-Event-ID: the rest of this run, and pi sees it once.
				resume: (after, s) => this.#post(id, `${kind}/stream`, body, s, after),
			},
			signal,
		);
	}

	#post(id: string, tail: string, body: object, signal: AbortSignal | undefined, after?: number): Promise<Response> {
		const headers: Record<string, string> = { accept: "text/event-stream" };
		if (after !== undefined) headers["last-event-id"] = String(after);
		return this.#http.send("POST", `/v1/sessions/{id}/${tail}`, {
			path: { id },
			body,
			headers,
			signal,
		});
	}
}

export type { paths };
