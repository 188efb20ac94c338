import { z } from "@hono/zod-openapi";
import PQueue from "p-queue";
import type { Logger } from "pino";
import { ApiError } from "../http/problem.ts";
import { type ExitInfo, PiProcess } from "../pi/child.ts";
import { encodeLine } from "../pi/jsonl.ts";
import { commandKind, type PiCommand, type PiResponse, type UiRequest } from "../pi/protocol.ts";
import { Approvals, resolvers } from "./approvals.ts";
import { EventLog } from "./event-log.ts";
import { applyUiRequest, emptyUiState, fireAndForgetMethods, type UiState } from "./ui-state.ts";

export const SessionStatus = z
	.enum(["starting", "idle", "running", "waiting", "exited", "crashed"])
	.openapi("SessionStatus");
export type SessionStatus = z.infer<typeof SessionStatus>;

export interface SessionLimits {
	maxQueued: number;
	commandTimeoutMs: number;
	startupTimeoutMs: number;
	shutdownGraceMs: number;
	eventLogMaxEvents: number;
	eventLogMaxBytes: number;
	maxLineChars: number;
	stderrTailBytes: number;
	approvalTimeoutMs: number;
	maxNotifications: number;
}

export interface SessionInit {
	id: string;
	name?: string;
	cwd: string;
	persist: boolean;
	command: string;
	args: string[];
	env: NodeJS.ProcessEnv;
	limits: SessionLimits;
	logger: Logger;
}

interface Pending {
	command: PiCommand;
	resolve(response: PiResponse): void;
	reject(error: Error): void;
	remainingMs: number;
	startedAt: number;
	timer?: NodeJS.Timeout;
}

/** What pi last told us about itself (get_state), kept for the session representation. */
export interface PiState {
	sessionId?: string;
	sessionFile?: string;
	sessionName?: string;
	model?: { provider: string; id: string };
	thinkingLevel?: string;
}

const stateChangingCommands = new Set([
	"set_model",
	"cycle_model",
	"set_thinking_level",
	"cycle_thinking_level",
	"new_session",
	"switch_session",
	"fork",
	"clone",
	"set_session_name",
]);

/**
 * One pi child and everything the gateway knows about it: the command queue and its
 * correlation, the event log, the dialogs it opened and its fire-and-forget UI state.
 */
export class Session {
	readonly id: string;
	readonly cwd: string;
	readonly persist: boolean;
	readonly createdAt = new Date();
	readonly log: EventLog;
	readonly approvals: Approvals;
	readonly ui: UiState = emptyUiState();
	name: string | undefined;
	lastActivityAt = Date.now();
	piState: PiState = {};
	currentRunId: string | undefined;
	/** Open SSE streams on this session (the limit is the gateway's). */
	sseSubscribers = 0;
	exit: (ExitInfo & { at: string; stderrTail: string }) | undefined;

	readonly #init: SessionInit;
	readonly #process: PiProcess;
	readonly #queue = new PQueue({ concurrency: 1 });
	readonly #pending = new Map<string, Pending>();
	#nextId = 0;
	#started = false;
	#running = false;
	#status: SessionStatus = "starting";
	#onStatus: ((session: Session) => void) | undefined;

	constructor(init: SessionInit) {
		this.#init = init;
		this.id = init.id;
		this.name = init.name;
		this.cwd = init.cwd;
		this.persist = init.persist;
		this.log = new EventLog(init.limits.eventLogMaxEvents, init.limits.eventLogMaxBytes);
		this.approvals = new Approvals(
			init.id,
			{
				requested: (approval) => {
					this.#gatewayEvent("approval_requested", { approval });
					this.#pauseDeadlines();
					this.#updateStatus();
				},
				resolved: (approval, response) => {
					if (response && this.isAlive) this.#write(response).catch(() => {});
					this.#gatewayEvent("approval_resolved", { approval });
					if (this.approvals.pendingCount === 0) this.#resumeDeadlines();
					this.#updateStatus();
				},
			},
			init.limits.approvalTimeoutMs,
		);
		this.#process = new PiProcess({
			command: init.command,
			args: init.args,
			cwd: init.cwd,
			env: init.env,
			maxLineChars: init.limits.maxLineChars,
			stderrTailBytes: init.limits.stderrTailBytes,
			onLine: (line) => this.#onLine(line),
			onOverflow: (chars) => {
				init.logger.warn({ sessionId: this.id, chars }, "pi printed a line over the cap; dropped");
				this.#gatewayEvent("line_dropped", { chars, reason: "line exceeds maxLineChars" });
			},
		});
		this.#process.exited.then((info) => this.#onExit(info));
	}

	get status(): SessionStatus {
		return this.#status;
	}

	get pid(): number | undefined {
		return this.#process.pid;
	}

	get isAlive(): boolean {
		return this.exit === undefined;
	}

	/** Between agent_start and agent_settled, as of the last line read from pi. */
	get isRunning(): boolean {
		return this.#running;
	}

	get queueDepth(): number {
		return this.#queue.size + this.#queue.pending;
	}

	onStatusChange(listener: (session: Session) => void): void {
		this.#onStatus = listener;
	}

	/** Spawns pi and waits for its first get_state: only then is the session usable. */
	async start(): Promise<void> {
		const { logger, limits } = this.#init;
		try {
			await this.#process.start();
		} catch (error) {
			throw new ApiError(502, "pi_spawn_failed", `Could not start pi: ${(error as Error).message}`);
		}
		try {
			const state = await this.#dispatch({ type: "get_state" }, limits.startupTimeoutMs);
			this.#takeState(state.data);
		} catch (error) {
			this.#process.kill();
			await this.#process.exited;
			const detail = error instanceof ApiError ? error.message : String(error);
			throw new ApiError(502, "pi_start_failed", `pi did not start: ${detail}`, {
				stderr: this.#process.stderrTail,
			});
		}
		this.#started = true;
		this.#updateStatus();
		logger.info({ sessionId: this.id, pid: this.pid }, "session started");
	}

	/**
	 * Sends one command and resolves with pi's response. Queued commands wait their turn;
	 * reads and controls go straight to pi so a stuck run can always be inspected and stopped.
	 */
	async request(command: PiCommand): Promise<PiResponse> {
		this.#assertAlive();
		this.lastActivityAt = Date.now();
		const timeout = this.#init.limits.commandTimeoutMs;
		if (command.type === "abort") {
			// pi's abort waits for the run to end, and a run blocked in a dialog only ends once the
			// dialog is answered: send abort first (so the run counts as aborted), then dismiss them.
			const answered = this.#dispatch(command, timeout);
			this.approvals.cancelAll(resolvers.abort);
			return answered;
		}
		if (commandKind(command.type) !== "queued") return this.#dispatch(command, timeout);
		if (this.queueDepth >= this.#init.limits.maxQueued) {
			throw new ApiError(429, "queue_full", `Session ${this.id} already has ${this.queueDepth} commands queued`);
		}
		const response = (await this.#queue.add(() => this.#dispatch(command, timeout))) as PiResponse;
		if (stateChangingCommands.has(command.type) && response.success) this.#refreshState();
		return response;
	}

	/** Stops pi (stdin end → SIGTERM → SIGKILL) and waits for it to exit. */
	async stop(): Promise<void> {
		await this.#process.close(this.#init.limits.shutdownGraceMs);
	}

	kill(signal: NodeJS.Signals = "SIGKILL"): void {
		this.#process.kill(signal);
	}

	nextCommandId(): string {
		return `gw_${(++this.#nextId).toString(36)}`;
	}

	async #dispatch(command: PiCommand, timeoutMs: number): Promise<PiResponse> {
		this.#assertAlive();
		const id = command.id ?? this.nextCommandId();
		const line = encodeLine({ ...command, id });
		const response = new Promise<PiResponse>((resolve, reject) => {
			const pending: Pending = { command, resolve, reject, remainingMs: timeoutMs, startedAt: Date.now() };
			this.#pending.set(id, pending);
			if (this.approvals.pendingCount === 0) this.#arm(id, pending);
		});
		try {
			await this.#write(line);
		} catch {
			this.#fail(id, new ApiError(502, "pi_exited", "pi exited before it read the command"));
		}
		return response;
	}

	#write(record: string | Record<string, unknown>): Promise<void> {
		return this.#process.write(typeof record === "string" ? record : encodeLine(record));
	}

	#arm(id: string, pending: Pending): void {
		pending.startedAt = Date.now();
		pending.timer = setTimeout(() => {
			const seconds = Math.round(this.#init.limits.commandTimeoutMs / 100) / 10;
			this.#fail(id, new ApiError(504, "pi_timeout", `pi did not answer ${pending.command.type} within ${seconds}s`));
		}, pending.remainingMs);
		pending.timer.unref();
	}

	/** A dialog is open: pi may be holding a response until a person answers, so the clock stops. */
	#pauseDeadlines(): void {
		const now = Date.now();
		for (const pending of this.#pending.values()) {
			if (!pending.timer) continue;
			clearTimeout(pending.timer);
			pending.timer = undefined;
			pending.remainingMs = Math.max(0, pending.remainingMs - (now - pending.startedAt));
		}
	}

	#resumeDeadlines(): void {
		for (const [id, pending] of this.#pending) if (!pending.timer) this.#arm(id, pending);
	}

	#fail(id: string, error: Error): void {
		const pending = this.#pending.get(id);
		if (!pending) return;
		clearTimeout(pending.timer);
		this.#pending.delete(id);
		pending.reject(error);
	}

	#onLine(line: string): void {
		let record: { type?: unknown; id?: unknown; command?: unknown; method?: unknown };
		try {
			record = JSON.parse(line);
		} catch {
			this.#init.logger.warn({ sessionId: this.id, line: line.slice(0, 200) }, "pi printed a non-JSON line; skipped");
			return;
		}
		if (typeof record !== "object" || record === null || typeof record.type !== "string") {
			this.#init.logger.warn({ sessionId: this.id, line: line.slice(0, 200) }, "pi printed a record without a type");
			return;
		}
		this.lastActivityAt = Date.now();
		const type = record.type;
		if (type === "response") {
			this.#onResponse(record as PiResponse, line);
			return;
		}
		if (type === "extension_ui_request") {
			this.log.append(type, line);
			this.#onUiRequest(record as UiRequest);
			return;
		}
		if (type === "agent_start") this.#setRunning(true);
		this.log.append(type, line);
		if (type === "agent_settled") {
			this.currentRunId = undefined;
			this.#setRunning(false);
		}
	}

	#onResponse(response: PiResponse, line: string): void {
		// Answers to reads belong to the one client that asked; everything else is session history.
		if (commandKind(response.command) !== "read") this.log.append("response", line);
		if (response.command === "prompt" && response.success) {
			const disposition = (response.data as { disposition?: string } | undefined)?.disposition;
			if (disposition === "started" && response.id) this.currentRunId = response.id;
		}
		const pending = response.id ? this.#pending.get(response.id) : undefined;
		if (!pending) {
			if (response.command === "parse")
				this.#init.logger.error({ sessionId: this.id, response }, "pi could not parse a command");
			return;
		}
		clearTimeout(pending.timer);
		this.#pending.delete(response.id as string);
		pending.resolve(response);
	}

	#onUiRequest(request: UiRequest): void {
		if (Approvals.isDialog(request.method)) this.approvals.open(request);
		else if (fireAndForgetMethods.has(request.method))
			applyUiRequest(this.ui, request, this.#init.limits.maxNotifications);
	}

	#onExit(info: ExitInfo): void {
		this.exit = { ...info, at: new Date().toISOString(), stderrTail: this.#process.stderrTail };
		const crashed = !info.requested && !(info.code === 0 && info.signal === null);
		const error = new ApiError(
			502,
			crashed ? "pi_crashed" : "pi_exited",
			`pi ${crashed ? "crashed" : "exited"} (code ${info.code}, signal ${info.signal})`,
			{
				stderr: this.exit.stderrTail,
			},
		);
		for (const id of [...this.#pending.keys()]) this.#fail(id, error);
		this.#queue.clear();
		this.approvals.abandonAll();
		this.#running = false;
		this.#status = crashed ? "crashed" : "exited";
		this.#gatewayEvent("session_status", { status: this.#status });
		this.#gatewayEvent("session_exit", {
			code: info.code,
			signal: info.signal,
			reason: crashed ? "crashed" : info.requested ? "stopped" : "exited",
			stderrTail: this.exit.stderrTail,
		});
		this.#onStatus?.(this);
		const log = crashed
			? this.#init.logger.warn.bind(this.#init.logger)
			: this.#init.logger.info.bind(this.#init.logger);
		log({ sessionId: this.id, code: info.code, signal: info.signal }, `session ${this.#status}`);
	}

	#setRunning(running: boolean): void {
		if (this.#running === running) return;
		this.#running = running;
		this.#updateStatus();
	}

	#updateStatus(): void {
		if (!this.isAlive) return;
		const next: SessionStatus = !this.#started
			? "starting"
			: this.approvals.pendingCount > 0
				? "waiting"
				: this.#running
					? "running"
					: "idle";
		if (next === this.#status) return;
		this.#status = next;
		this.#gatewayEvent("session_status", { status: next });
		this.#init.logger.info({ sessionId: this.id, status: next }, "session status");
		this.#onStatus?.(this);
	}

	#gatewayEvent(type: string, fields: Record<string, unknown>): void {
		this.log.append(type, JSON.stringify({ type, sessionId: this.id, ...fields }));
	}

	#refreshState(): void {
		this.#dispatch({ type: "get_state" }, this.#init.limits.commandTimeoutMs).then(
			(response) => this.#takeState(response.data),
			() => {},
		);
	}

	#takeState(data: unknown): void {
		const state = (data ?? {}) as {
			sessionId?: string;
			sessionFile?: string;
			sessionName?: string;
			model?: { provider: string; id: string };
			thinkingLevel?: string;
		};
		this.piState = {
			sessionId: state.sessionId,
			sessionFile: state.sessionFile,
			sessionName: state.sessionName,
			model: state.model ? { provider: state.model.provider, id: state.model.id } : undefined,
			thinkingLevel: state.thinkingLevel,
		};
		if (state.sessionName) this.name = state.sessionName;
	}

	#assertAlive(): void {
		if (this.exit) {
			throw new ApiError(
				502,
				this.#status === "crashed" ? "pi_crashed" : "pi_exited",
				`Session ${this.id} is ${this.#status}`,
				{
					stderr: this.exit.stderrTail,
				},
			);
		}
	}
}
