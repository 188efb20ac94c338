import { z } from "@hono/zod-openapi";
import PQueue from "p-queue";
import type { Logger } from "pino";
import { ApiError } from "../http/problem.ts";
import { type ExitInfo, PiProcess } from "../pi/child.ts";
import { isEventType, typeOf } from "../pi/event-type.ts";
import { encodeLine } from "../pi/jsonl.ts";
import { commandKind, type PiCommand, type PiResponse, type UiRequest } from "../pi/protocol.ts";
import { Approvals, resolvers } from "./approvals.ts";
import { EventLog } from "./event-log.ts";
import { InFlight } from "./in-flight.ts";
import { applyUiRequest, emptyUiState, fireAndForgetMethods, type UiState } from "./ui-state.ts";

export const SessionStatus = z
	.enum(["starting", "idle", "running", "waiting", "stopped", "exited", "crashed"])
	.openapi("SessionStatus", {
		description:
			"`stopped`: no pi process (hibernated, or restored after a gateway restart); the next command or POST …/resume starts pi again on the same session file",
	});
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

/** How to start one pi process for this session (a resume starts a new one with other args). */
export interface SpawnCommand {
	command: string;
	args: string[];
	env: NodeJS.ProcessEnv;
	/** The command bwrap runs, when `command` is bwrap. */
	sandboxed?: { command: string };
}

/** Why the gateway stopped pi: `stopped` (DELETE), `idle`/`lru` (hibernation), `shutdown`. */
export type StopReason = "stopped" | "idle" | "lru" | "shutdown";

export interface SessionInit {
	id: string;
	name?: string;
	cwd: string;
	persist: boolean;
	limits: SessionLimits;
	logger: Logger;
	/** A session read back from the store: it starts `stopped`, and its log continues after lastSeq. */
	restored?: { createdAt: Date; lastActivityAt: number; lastSeq: number; piState: PiState };
	/** Checks (and rewrites) every command before anything else happens to it: limits, paths. */
	guard?(command: PiCommand): PiCommand;
	/** The working folder a pi session file records (its header), so the view follows a switch. */
	cwdOf?(sessionFile: string): string | undefined;
	/** Starts pi again for a `stopped` session before a command (the registry minds the process cap). */
	wake?(session: Session): Promise<void>;
}

/** What pi last told us about itself (get_state), kept for the session representation. */
export interface PiState {
	sessionId?: string;
	sessionFile?: string;
	sessionName?: string;
	model?: { provider: string; id: string };
	thinkingLevel?: string;
	/** The gateway saw sessionFile on disk (pi writes it lazily): from then on its absence is a loss. */
	fileSeen?: boolean;
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
	/** pi's working folder; a switch_session to a file from another folder moves it. */
	cwd: string;
	readonly persist: boolean;
	readonly createdAt: Date;
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
	/** The current pi child; undefined while stopped. A resume puts a new one here. */
	#process: PiProcess | undefined;
	#ready: Promise<void> | undefined;
	/** Set when the gateway asked the current child to stop, and why. */
	#stopping: StopReason | undefined;
	/** Requests between entry and answer: a session with any is never hibernated. */
	#inflight = 0;
	readonly #queue = new PQueue({ concurrency: 1 });
	readonly #inFlight = new InFlight();
	#nextId = 0;
	#piQueued = 0;
	/** How the last pi ended, for the commands that were queued for it. */
	#exitError: ApiError | undefined;
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
		this.log = new EventLog(init.limits.eventLogMaxEvents, init.limits.eventLogMaxBytes, init.restored?.lastSeq);
		this.approvals = new Approvals(
			init.id,
			{
				requested: (approval) => {
					this.#gatewayEvent("approval_requested", { approval });
					this.#inFlight.pause();
					this.#updateStatus();
				},
				resolved: (approval, response) => {
					if (response && this.#process) this.#write(response).catch(() => {});
					this.#gatewayEvent("approval_resolved", { approval });
					if (this.approvals.pendingCount === 0) this.#inFlight.resume();
					this.#updateStatus();
				},
			},
			init.limits.approvalTimeoutMs,
		);
		const restored = init.restored;
		this.createdAt = restored?.createdAt ?? new Date();
		if (restored) {
			this.lastActivityAt = restored.lastActivityAt;
			this.piState = restored.piState;
			this.#status = "stopped";
		}
	}

	get status(): SessionStatus {
		return this.#status;
	}

	get pid(): number | undefined {
		return this.#process?.pid;
	}

	/** Not finished: running, starting, or stopped and able to start again. */
	get isAlive(): boolean {
		return this.#status !== "exited" && this.#status !== "crashed";
	}

	/** A pi child exists (starting, running or being stopped). */
	get hasProcess(): boolean {
		return this.#process !== undefined;
	}

	get isStopping(): boolean {
		return this.#stopping !== undefined;
	}

	/** pi can be started again on this session's file (after a stop, a crash or a restart). */
	get resumable(): boolean {
		return this.persist && this.piState.sessionFile !== undefined;
	}

	/** Idle with nothing in flight: stopping its process now interrupts nothing. */
	get isQuiet(): boolean {
		return (
			this.#process !== undefined &&
			this.#stopping === undefined &&
			this.#status === "idle" &&
			this.#inflight === 0 &&
			this.#inFlight.size === 0 &&
			this.queueDepth === 0 &&
			this.approvals.pendingCount === 0
		);
	}

	/** Quiet, and pi can be started again on its file: stopping it now loses nothing. */
	get canHibernate(): boolean {
		return this.isQuiet && this.resumable;
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

	/**
	 * Spawns pi and waits for its first get_state: only then is the session usable. A stopped
	 * session starts again the same way, with a new child and the same id, log and approvals.
	 */
	start(plan: SpawnCommand): Promise<void> {
		if (this.#process) throw new Error(`Session ${this.id} already has a pi process`);
		const { limits, logger } = this.#init;
		const child: PiProcess = new PiProcess({
			...plan,
			cwd: this.cwd,
			maxLineChars: limits.maxLineChars,
			stderrTailBytes: limits.stderrTailBytes,
			onLine: (line) => {
				if (child === this.#process) this.#onLine(line);
			},
			onOverflow: (chars, head) => {
				logger.warn({ sessionId: this.id, chars }, "pi printed a line over the cap; dropped");
				this.#gatewayEvent("line_dropped", { chars, reason: "line exceeds maxLineChars" });
				this.#refuseOversized(chars, head);
			},
		});
		// Synchronously, so the registry counts this child from now on.
		this.#process = child;
		this.exit = undefined;
		this.#started = false;
		this.#setStatus("starting");
		child.exited.then((info) => this.#onExit(child, info));
		this.#ready = this.#start(child);
		return this.#ready;
	}

	async #start(child: PiProcess): Promise<void> {
		const { logger, limits } = this.#init;
		try {
			await child.start();
		} catch (error) {
			await child.exited;
			throw new ApiError(502, "pi_spawn_failed", `Could not start pi: ${(error as Error).message}`);
		}
		try {
			const state = await this.#dispatch({ type: "get_state" }, limits.startupTimeoutMs);
			this.#takeState(state.data);
		} catch (error) {
			child.kill();
			await child.exited;
			const detail = error instanceof ApiError ? error.message : String(error);
			throw new ApiError(502, "pi_start_failed", `pi did not start: ${detail}`, {
				stderr: child.stderrTail,
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
		const checked = this.#init.guard ? this.#init.guard(command) : command;
		this.lastActivityAt = Date.now();
		this.#inflight++;
		try {
			await this.#ensureRunning();
			return await this.#send(checked);
		} finally {
			this.#inflight--;
			this.lastActivityAt = Date.now();
		}
	}

	/** A stopped session starts again first (when the gateway allows it); a starting one is awaited. */
	async #ensureRunning(): Promise<void> {
		if (this.#stopping) await this.#process?.exited;
		if (this.#process) {
			if (!this.#started) await this.#ready?.catch(() => {});
			return;
		}
		if (this.#status === "stopped" && this.#init.wake) await this.#init.wake(this);
	}

	async #send(command: PiCommand): Promise<PiResponse> {
		this.#assertAlive();
		const timeout = this.#init.limits.commandTimeoutMs;
		if (command.type === "abort") {
			// pi's abort waits for the run to end, and a run blocked in a dialog only ends once the
			// dialog is answered: send abort first (so the run counts as aborted), then dismiss them.
			const answered = this.#dispatch(command, timeout);
			this.approvals.cancelAll(resolvers.abort);
			return answered;
		}
		if (commandKind(command.type) !== "queued") return this.#dispatch(command, timeout);
		const queuesInPi = queuesMessage(command);
		this.#assertRoom(queuesInPi);
		const child = this.#process;
		const response = (await this.#queue.add(() => {
			// The pi this command was queued for is gone: it gets that pi's end, not the next pi.
			if (this.#process !== child) throw this.#exitError ?? new ApiError(502, "pi_exited", "pi exited");
			// pi's own queue may have grown while this waited its turn.
			if (queuesInPi) this.#assertRoom(true, 1);
			return this.#dispatch(command, timeout);
		})) as PiResponse;
		if (stateChangingCommands.has(command.type) && response.success) this.#refreshState();
		return response;
	}

	/**
	 * --max-queued bounds what waits: the gateway's queue, and for steer/follow-up messages also
	 * pi's own steering and follow-up queue (which they join, and which the gateway's queue
	 * never sees grow: pi accepts each at once). `self` is 1 when the command is itself counted.
	 */
	#assertRoom(queuesInPi: boolean, self = 0): void {
		const max = this.#init.limits.maxQueued;
		const waiting = this.queueDepth - self + (queuesInPi ? this.#piQueued : 0);
		if (waiting < max) return;
		const inPi =
			queuesInPi && this.#piQueued > 0 ? ` (${this.#piQueued} of them steer/follow-up messages inside pi)` : "";
		throw new ApiError(429, "queue_full", `Session ${this.id} already has ${waiting} commands queued${inPi}`);
	}

	/** Messages waiting in pi's steering and follow-up queues, as of its last queue_update. */
	get piQueued(): number {
		return this.#piQueued;
	}

	/**
	 * Stops pi (stdin end → SIGTERM → SIGKILL) and waits for it to exit. `idle`, `lru` and
	 * `shutdown` leave a persistent session `stopped` (resumable); `stopped` (DELETE) ends it.
	 */
	async stop(reason: StopReason = "stopped"): Promise<void> {
		const child = this.#process;
		if (!child) return;
		this.#stopping ??= reason;
		await child.close(this.#init.limits.shutdownGraceMs);
	}

	kill(signal: NodeJS.Signals = "SIGKILL", sweepNow = false): void {
		this.#process?.kill(signal, sweepNow);
	}

	nextCommandId(): string {
		return `gw_${(++this.#nextId).toString(36)}`;
	}

	async #dispatch(command: PiCommand, timeoutMs: number): Promise<PiResponse> {
		this.#assertAlive();
		const id = command.id ?? this.nextCommandId();
		const line = encodeLine({ ...command, id });
		const response = this.#inFlight.add(id, command, timeoutMs);
		const child = this.#process;
		try {
			await this.#write(line);
		} catch {
			// A pipe that broke means pi is going: its exit (crashed or exited) fails this command
			// with the right code; the fallback is for a child that was already gone.
			await child?.exited;
			this.#inFlight.fail(id, new ApiError(502, "pi_exited", "pi exited before it read the command"));
		}
		return response;
	}

	#write(record: string | Record<string, unknown>): Promise<void> {
		if (!this.#process) return Promise.reject(new Error("pi is not running"));
		return this.#process.write(typeof record === "string" ? record : encodeLine(record));
	}

	/**
	 * A line over the cap is dropped unread; if it was the answer to a pending command, that
	 * command fails now (502) instead of waiting for its deadline.
	 */
	#refuseOversized(chars: number, head: string): void {
		if (!/"type"\s*:\s*"response"/.test(head)) return;
		const id = /"id"\s*:\s*"([^"\\]{1,64})"/.exec(head)?.[1];
		const command = id ? this.#inFlight.commandOf(id) : undefined;
		if (!id || !command) return;
		const limit = this.#init.limits.maxLineChars;
		this.#inFlight.fail(
			id,
			new ApiError(
				502,
				"pi_answer_too_large",
				`pi's answer to ${command.type} was ${chars} characters, over the gateway's limit of ${limit} (maxLineChars)`,
			),
		);
	}

	#onLine(line: Buffer): void {
		// Hot path: pi writes events as {"type":"…",…}. For all but two types the gateway needs only
		// the type, so the line is forwarded as the bytes pi printed, without a decode or JSON.parse.
		const fast = typeOf(line);
		if (fast !== undefined && fast !== "response" && fast !== "extension_ui_request") {
			this.lastActivityAt = Date.now();
			this.#onEvent(fast, line);
			return;
		}
		const text = line.toString("utf8");
		let record: { type?: unknown; id?: unknown; command?: unknown; method?: unknown };
		try {
			record = JSON.parse(text);
		} catch {
			this.#init.logger.warn({ sessionId: this.id, line: text.slice(0, 200) }, "pi printed a non-JSON line; skipped");
			return;
		}
		if (typeof record !== "object" || record === null || typeof record.type !== "string") {
			this.#init.logger.warn({ sessionId: this.id, line: text.slice(0, 200) }, "pi printed a record without a type");
			return;
		}
		if (!isEventType(record.type)) {
			this.#init.logger.warn({ sessionId: this.id, line: text.slice(0, 200) }, "pi printed a record of no valid type");
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
		this.#onEvent(type, line);
	}

	/** A session event: logged as pi printed it; run boundaries move the status. */
	#onEvent(type: string, line: Buffer): void {
		if (type === "agent_start") this.#setRunning(true);
		else if (type === "queue_update") this.#piQueued = queueLength(line);
		this.log.append(type, line);
		if (type === "agent_settled") {
			this.currentRunId = undefined;
			this.#setRunning(false);
		}
	}

	#onResponse(response: PiResponse, line: Buffer): void {
		// Answers to reads belong to the one client that asked; everything else is session history.
		if (commandKind(response.command) !== "read") this.log.append("response", line);
		if (response.command === "prompt" && response.success) {
			const disposition = (response.data as { disposition?: string } | undefined)?.disposition;
			if (disposition === "started" && response.id) this.currentRunId = response.id;
		}
		if (!this.#inFlight.settle(response) && response.command === "parse") {
			this.#init.logger.error({ sessionId: this.id, response }, "pi could not parse a command");
		}
	}

	#onUiRequest(request: UiRequest): void {
		if (Approvals.isDialog(request.method)) this.approvals.open(request);
		else if (fireAndForgetMethods.has(request.method))
			applyUiRequest(this.ui, request, this.#init.limits.maxNotifications);
	}

	#onExit(child: PiProcess, info: ExitInfo): void {
		if (child !== this.#process) return;
		this.#process = undefined;
		const reason = this.#stopping;
		this.#stopping = undefined;
		this.exit = { ...info, at: new Date().toISOString(), stderrTail: child.stderrTail };
		const crashed = !info.requested && !(info.code === 0 && info.signal === null);
		const error =
			reason === "stopped" && !crashed
				? new ApiError(410, "session_deleted", `Session ${this.id} was deleted before pi answered this command`)
				: reason === "shutdown" && !crashed
					? new ApiError(503, "shutting_down", "The gateway is shutting down")
					: new ApiError(
							502,
							crashed ? "pi_crashed" : "pi_exited",
							`pi ${crashed ? "crashed" : "exited"} (code ${info.code}, signal ${info.signal})`,
							{ stderr: this.exit.stderrTail },
						);
		this.#exitError = error;
		// In flight: failed now. Queued: each meets this error when its turn comes (see #send), at
		// once, since nothing ahead of it waits any more; p-queue's clear() would reject with AbortError.
		this.#inFlight.failAll(error);
		this.approvals.abandonAll();
		this.#running = false;
		this.#piQueued = 0;
		// A persistent session the gateway put to sleep keeps its place and starts again on demand.
		const asleep = !crashed && reason !== undefined && reason !== "stopped" && this.resumable;
		this.#setStatus(crashed ? "crashed" : asleep ? "stopped" : "exited");
		this.#gatewayEvent("session_exit", {
			code: info.code,
			signal: info.signal,
			reason: crashed ? "crashed" : (reason ?? (info.requested ? "stopped" : "exited")),
			resumable: this.resumable,
			stderrTail: this.exit.stderrTail,
		});
		const { logger } = this.#init;
		const log = crashed ? logger.warn.bind(logger) : logger.info.bind(logger);
		log({ sessionId: this.id, code: info.code, signal: info.signal, reason }, `session ${this.#status}`);
	}

	#setRunning(running: boolean): void {
		if (this.#running === running) return;
		this.#running = running;
		this.#updateStatus();
	}

	#updateStatus(): void {
		if (!this.#process) return;
		this.#setStatus(
			!this.#started ? "starting" : this.approvals.pendingCount > 0 ? "waiting" : this.#running ? "running" : "idle",
		);
	}

	#setStatus(next: SessionStatus): void {
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
		if (state.sessionFile && state.sessionFile !== this.piState.sessionFile) {
			const cwd = this.#init.cwdOf?.(state.sessionFile);
			if (cwd) this.cwd = cwd;
		}
		this.piState = {
			sessionId: state.sessionId,
			sessionFile: state.sessionFile,
			sessionName: state.sessionName,
			model: state.model ? { provider: state.model.provider, id: state.model.id } : undefined,
			thinkingLevel: state.thinkingLevel,
			fileSeen: state.sessionFile === this.piState.sessionFile ? this.piState.fileSeen : undefined,
		};
		if (state.sessionName) this.name = state.sessionName;
	}

	#assertAlive(): void {
		if (this.#process) return;
		if (this.#status === "stopped") {
			throw new ApiError(
				409,
				"session_stopped",
				`Session ${this.id} is stopped; POST /v1/sessions/${this.id}/resume starts pi again`,
			);
		}
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

/** Commands that add a message to pi's steering or follow-up queue (a prompt only while a run streams). */
function queuesMessage(command: PiCommand): boolean {
	return (
		command.type === "steer" ||
		command.type === "follow_up" ||
		(command.type === "prompt" && command.streamingBehavior !== undefined)
	);
}

/** Entries in a queue_update event (both queues hold the complete current lists). */
function queueLength(line: Buffer): number {
	try {
		const { steering, followUp } = JSON.parse(line.toString("utf8")) as { steering?: unknown; followUp?: unknown };
		return (Array.isArray(steering) ? steering.length : 0) + (Array.isArray(followUp) ? followUp.length : 0);
	} catch {
		return 0;
	}
}
