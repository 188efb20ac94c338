// Over 300 lines on purpose: a Session is the state machine of one pi child. Its lifecycle
// (start, stop, exit), the routing of pi's lines and its status all read and write the same
// few fields (process, status, running), so splitting them would trade one file for getters
// between three. What has a job of its own lives beside it: command-channel.ts (queue,
// in-flight commands, ids, oversized answers, state refresh), session-types.ts,
// approvals.ts, ui-state.ts, event-log.ts.
import type { RpcSessionState } from "@earendil-works/pi-coding-agent";
import type { Logger } from "pino";
import { GatewayError } from "../errors.ts";
import { type ExitInfo, PiProcess } from "../pi/child.ts";
import {
	type Dialect,
	extensionCommandNames,
	hasNameFlag,
	lacksCommand,
	legacyDisposition,
	legacyMessageUpdate,
	looksLegacy,
	synthesisedSettled,
} from "../pi/dialect.ts";
import { isEventType, typeOf } from "../pi/event-type.ts";
import { commandKind, isDialogRequest, type PiCommand, type PiResponse, type UiRequest } from "../pi/protocol.ts";
import { Approvals, resolvers } from "./approvals.ts";
import { CommandChannel } from "./command-channel.ts";
import { EventLog } from "./event-log.ts";
import type { PiState, SessionInit, SessionStatus, SpawnCommand, StopReason } from "./session-types.ts";
import { applyUiRequest, emptyUiState, fireAndForgetMethods, type UiState } from "./ui-state.ts";

export type { PiState, SessionInit, SessionLimits, SpawnCommand, StopReason } from "./session-types.ts";
export { SessionStatus } from "./session-types.ts";

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
	/** Everything pi and the gateway said in this session, numbered and bounded: what SSE streams replay. */
	readonly events: EventLog;
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
	#openRequests = 0;
	readonly #channel: CommandChannel;
	/** pino, with this session's id on every line. */
	readonly #logger: Logger;
	#started = false;
	#running = false;
	#status: SessionStatus = "starting";
	#onStatus: ((session: Session) => void) | undefined;
	/** What this pi speaks: a legacy pi's lines are adapted to the current protocol (pi/dialect.ts). */
	dialect: Dialect;
	/** A legacy pi's extension commands, as of its start: their prompts are `handled`. */
	#extensionCommands: ReadonlySet<string> = new Set();

	constructor(init: SessionInit) {
		this.#init = init;
		this.id = init.id;
		this.dialect = init.dialect ?? "current";
		this.name = init.name;
		this.cwd = init.cwd;
		this.persist = init.persist;
		this.#logger = init.logger.child({ sessionId: init.id });
		this.#channel = new CommandChannel({
			id: init.id,
			limits: init.limits,
			process: () => this.#process,
			assertAlive: () => this.#assertAlive(),
			takeState: (data) => this.#takeState(data),
		});
		this.events = new EventLog(init.limits.eventLogMaxEvents, init.limits.eventLogMaxBytes, init.restored?.lastSeq);
		this.approvals = new Approvals(
			init.id,
			{
				requested: (approval) => {
					this.#gatewayEvent("approval_requested", { approval });
					this.#channel.pause();
					this.#updateStatus();
				},
				resolved: (approval, response) => {
					if (response && this.#process) this.#channel.write(response).catch(() => {});
					this.#gatewayEvent("approval_resolved", { approval });
					if (this.approvals.pendingCount === 0) this.#channel.resume();
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
			this.#openRequests === 0 &&
			this.#channel.inFlightCount === 0 &&
			this.queueDepth === 0 &&
			this.approvals.pendingCount === 0
		);
	}

	/** Stopped with nothing waiting on it: another node may take it over (cluster mode). */
	get isReleasable(): boolean {
		return (
			this.#process === undefined &&
			this.#status === "stopped" &&
			this.#openRequests === 0 &&
			this.sseSubscribers === 0 &&
			this.resumable
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
		return this.#channel.queueDepth;
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
		const { limits } = this.#init;
		const logger = this.#logger;
		const child: PiProcess = new PiProcess({
			...plan,
			cwd: this.cwd,
			maxLineChars: limits.maxLineChars,
			stderrTailBytes: limits.stderrTailBytes,
			onLine: (line) => {
				if (child === this.#process) this.#onLine(line);
			},
			onOverflow: (chars, head) => {
				logger.warn({ chars }, "pi printed a line over the cap; dropped");
				this.#gatewayEvent("line_dropped", { chars, reason: "line exceeds maxLineChars" });
				this.#channel.refuseOversized(chars, head);
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
		const { limits } = this.#init;
		try {
			await child.start();
		} catch (error) {
			await child.exited;
			throw new GatewayError(502, "pi_spawn_failed", `Could not start pi: ${(error as Error).message}`);
		}
		try {
			const state = await this.#channel.dispatch({ type: "get_state" }, limits.startupTimeoutMs);
			this.#takeState(state.data);
			// A legacy pi cannot say a prompt was `handled`: learn its extension commands to tell.
			if (this.dialect === "legacy") {
				const commands = await this.#channel.dispatch({ type: "get_commands" }, limits.startupTimeoutMs);
				this.#extensionCommands = extensionCommandNames(commands.data);
			}
			// A legacy pi has no --name flag (pi/dialect.ts): it gets the name once it runs.
			if (!hasNameFlag(this.dialect) && this.name && this.piState.sessionName !== this.name) {
				await this.#channel.dispatch({ type: "set_session_name", name: this.name }, limits.startupTimeoutMs);
				this.piState.sessionName = this.name;
			}
		} catch (error) {
			child.kill();
			await child.exited;
			const detail = error instanceof GatewayError ? error.message : String(error);
			throw new GatewayError(502, "pi_start_failed", `pi did not start: ${detail}`, {
				stderr: child.stderrTail,
			});
		}
		this.#started = true;
		this.#updateStatus();
		this.#logger.info({ pid: this.pid }, "session started");
	}

	/**
	 * Sends one command and resolves with pi's response. Queued commands wait their turn;
	 * reads and controls go straight to pi so a stuck run can always be inspected and stopped.
	 */
	async request(command: PiCommand): Promise<PiResponse> {
		this.#assertSupported(command.type);
		const checked = this.#init.guard ? this.#init.guard(command) : command;
		this.lastActivityAt = Date.now();
		this.#openRequests++;
		try {
			await this.#ensureRunning();
			return await this.#send(checked);
		} finally {
			this.#openRequests--;
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
			const answered = this.#channel.dispatch(command, timeout);
			this.approvals.cancelAll(resolvers.abort);
			return answered;
		}
		return this.#channel.send(command, timeout);
	}

	/** Messages waiting in pi's steering and follow-up queues, as of its last queue_update. */
	get piQueued(): number {
		return this.#channel.piQueued;
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
		return this.#channel.nextCommandId();
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
			this.#logger.warn({ line: text.slice(0, 200) }, "pi printed a non-JSON line; skipped");
			return;
		}
		if (typeof record !== "object" || record === null || typeof record.type !== "string") {
			this.#logger.warn({ line: text.slice(0, 200) }, "pi printed a record without a type");
			return;
		}
		if (!isEventType(record.type)) {
			this.#logger.warn({ line: text.slice(0, 200) }, "pi printed a record of no valid type");
			return;
		}
		this.lastActivityAt = Date.now();
		const type = record.type;
		if (type === "response") {
			this.#onResponse(record as PiResponse, line);
			return;
		}
		if (type === "extension_ui_request") {
			this.events.append(type, line);
			this.#onUiRequest(record as UiRequest);
			return;
		}
		this.#onEvent(type, line);
	}

	/** A session event: logged as pi printed it; run boundaries move the status. */
	#onEvent(type: string, line: Buffer): void {
		if (type === "agent_start") this.#setRunning(true);
		else if (type === "queue_update") this.#channel.piQueueUpdated(line);
		if (this.dialect === "legacy" && type === "message_update")
			line = Buffer.from(legacyMessageUpdate(line.toString("utf8")));
		this.events.append(type, line);
		// A legacy pi ends a run with agent_end only: with nothing left in its queue, it is settled.
		if (this.dialect === "legacy" && type === "agent_end" && this.#channel.piQueued === 0) {
			this.#onEvent("agent_settled", Buffer.from(synthesisedSettled(line.toString("utf8"))));
		}
		if (type === "agent_settled") {
			this.currentRunId = undefined;
			this.#setRunning(false);
		}
	}

	#onResponse(response: PiResponse, line: Buffer): void {
		if (this.dialect === "current" && looksLegacy(response)) {
			this.#logger.warn("pi accepted a prompt without a disposition: a legacy pi (0.73)");
			this.dialect = "legacy";
		}
		if (this.dialect === "legacy" && looksLegacy(response)) {
			// The disposition pi 1.x would have sent, so run streams and wait mode read one contract.
			const message = response.id ? this.#channel.commandOf(response.id)?.message : undefined;
			const disposition = legacyDisposition(this.#running, message, this.#extensionCommands);
			response = { ...response, data: { disposition } };
			line = Buffer.from(JSON.stringify(response));
		}
		// Answers to reads belong to the one client that asked; everything else is session history.
		if (commandKind(response.command) !== "read") this.events.append("response", line);
		if (response.command === "prompt" && response.success) {
			const disposition = (response.data as { disposition?: string } | undefined)?.disposition;
			if (disposition === "started" && response.id) this.currentRunId = response.id;
		}
		if (!response.id && !response.success && this.#unknownCommand(response)) return;
		if (!this.#channel.settle(response) && response.command === "parse") {
			this.#logger.error({ response }, "pi could not parse a command");
		}
	}

	#onUiRequest(request: UiRequest): void {
		if (isDialogRequest(request)) this.approvals.open(request);
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
				? new GatewayError(410, "session_deleted", `Session ${this.id} was deleted before pi answered this command`)
				: reason === "shutdown" && !crashed
					? new GatewayError(503, "shutting_down", "The gateway is shutting down")
					: new GatewayError(
							502,
							crashed ? "pi_crashed" : "pi_exited",
							`pi ${crashed ? "crashed" : "exited"} (code ${info.code}, signal ${info.signal})`,
							{ stderr: this.exit.stderrTail },
						);
		this.#channel.failAll(error);
		this.approvals.abandonAll();
		this.#running = false;
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
		const logger = this.#logger;
		const log = crashed ? logger.warn.bind(logger) : logger.info.bind(logger);
		log({ code: info.code, signal: info.signal, reason }, `session ${this.#status}`);
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
		this.#logger.info({ status: next }, "session status");
		this.#onStatus?.(this);
	}

	#gatewayEvent(type: string, fields: Record<string, unknown>): void {
		this.events.append(type, JSON.stringify({ type, sessionId: this.id, ...fields }));
	}

	#takeState(data: unknown): void {
		// pi's own get_state type; partial, since the line came over a pipe.
		const state = (data ?? {}) as Partial<RpcSessionState>;
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

	/**
	 * pi 0.73 answers a command it does not know without its id: that would hang the command until
	 * its deadline. The oldest one of that type gets 501 now (a pi whose age was not detected).
	 */
	#unknownCommand(response: PiResponse): boolean {
		if (!/^Unknown command: /.test(response.error ?? "")) return false;
		return this.#channel.failOldest(response.command, notSupported(response.command));
	}

	/** A command this pi does not have: 501 at once (a legacy pi answers it without an id: it would hang). */
	#assertSupported(type: string): void {
		if (!lacksCommand(this.dialect, type)) return;
		throw notSupported(type);
	}

	#assertAlive(): void {
		if (this.#process) return;
		if (this.#status === "stopped") {
			throw new GatewayError(
				409,
				"session_stopped",
				`Session ${this.id} is stopped; POST /v1/sessions/${this.id}/resume starts pi again`,
			);
		}
		if (this.exit) {
			throw new GatewayError(
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

function notSupported(type: string): GatewayError {
	return new GatewayError(
		501,
		"not_supported_by_pi",
		`The pi this session runs (an older one, like 0.73) has no ${type} command`,
	);
}
