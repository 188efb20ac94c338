// Over 300 lines on purpose: a Session is the state machine of one pi child. Its lifecycle
// (start, stop, exit), the routing of pi's lines and its status all read and write the same
// few fields (process, status, running), so splitting them would trade one file for getters
// between three. What has a job of its own lives beside it: command-channel.ts (queue,
// in-flight commands, ids, oversized answers, state refresh), legacy-adapter.ts (what a
// pi 0.73 child needs to speak the current protocol), session-types.ts, approvals.ts,
// client-tool-calls.ts, ui-state.ts, event-log.ts.
import type { Logger } from "pino";
import { type ExitInfo, PiProcess } from "../../pi/child.ts";
import { readRecord, typeOf } from "../../pi/event-type.ts";
import type { JsonlHandlers } from "../../pi/jsonl.ts";
import { commandKind, isDialogRequest, type PiCommand, type PiResponse, type UiRequest } from "../../pi/protocol.ts";
import type { GatewayError } from "../../shared/errors.ts";
import { openCheckedFolder } from "../../shared/paths.ts";
import { Approvals, resolvers } from "../dialogs/approvals.ts";
import { ToolCalls, toolCallResolvers } from "../dialogs/client-tool-calls.ts";
import { clientToolDialogTitle, readClientToolRequest } from "../dialogs/client-tools.ts";
import { EventLog } from "../events/event-log.ts";
import { Budget } from "./budget.ts";
import { CommandChannel } from "./command-channel.ts";
import type { FolderRestoreReport } from "./folder-report.ts";
import { LegacyAdapter } from "./legacy-adapter.ts";
import { exitError, notRunningError, spawnError, startError } from "./session-errors.ts";
import type {
	PiState,
	SessionInit as SessionInitOf,
	SessionStatus,
	SpawnCommand,
	StopReason,
	UncleanStop,
} from "./session-types.ts";
import { piStateOf } from "./session-types.ts";
import { applyUiRequest, emptyUiState, fireAndForgetMethods, type UiState } from "./ui-state.ts";

export type { PiState, SessionLimits, SpawnCommand, StopReason } from "./session-types.ts";
/** What a session starts from; `wake` is handed the session itself. */
export type SessionInit = SessionInitOf<Session>;
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
	/** When a caller created it: a warm-pool session's is set again when a create takes it (registry). */
	createdAt: Date;
	/** Everything pi and the gateway said in this session, numbered and bounded: what SSE streams replay. */
	readonly events: EventLog;
	readonly approvals: Approvals;
	/** Tokens and cost all its runs used, against the session's budget (budget.ts). */
	readonly budget: Budget;
	/** Calls of the session's client tools, which the program answers. */
	readonly toolCalls: ToolCalls;
	readonly ui: UiState = emptyUiState();
	name: string | undefined;
	lastActivityAt = Date.now();
	piState: PiState = {};
	currentRunId: string | undefined;
	/** Open SSE streams on this session (the limit is the gateway's): the followers of its log. */
	get sseSubscribers(): number {
		return this.events.followers;
	}
	exit: (ExitInfo & { at: string; stderrTail: string }) | undefined;
	/** Cluster mode: what this node restored of the session's folder when it took the session over (src/cluster/folder-sync.ts). */
	folderRestore: FolderRestoreReport | undefined;
	/**
	 * Asked before pi's agent_settled is logged (beforeSettle): true from any holds it back, the
	 * user-visible run goes on (a structured-output repair turn, run-output-watch.ts) and
	 * `settle(line)` logs it later; run limits flush their event here, before the settle.
	 */
	readonly #settleHooks = new Set<(line: Buffer | string) => boolean>();
	/** A held settle: the next run pi starts continues the current one (same currentRunId). */
	#settleHeld = false;
	/**
	 * Dialogs the gateway answers itself (the snapshot gate, src/workspace/snapshot-gate.ts): for such a
	 * request, when to dismiss it; undefined for any other dialog.
	 */
	quietDialog: ((request: UiRequest) => Promise<unknown> | undefined) | undefined;

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
	/** A legacy pi's lines, adapted to the current protocol (a current pi's pass unchanged). */
	readonly #legacy: LegacyAdapter;
	readonly #clientTools: ReadonlySet<string>;
	/** Tools pi is running now (tool_execution_start, not yet _end), by toolCallId: only those can be client tool calls. */
	readonly #executing = new Map<string, string>();

	constructor(init: SessionInit) {
		this.#init = init;
		this.id = init.id;
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
		this.#legacy = new LegacyAdapter(init.dialect ?? "current", this.#channel, this.#logger);
		this.events = new EventLog(
			init.limits.eventLogMaxEvents,
			init.limits.eventLogMaxBytes,
			init.restored?.lastSeq,
			init.restored?.unclean === undefined,
		);
		this.budget = new Budget(this.events);
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
					this.#answered();
				},
			},
			init.limits.approvalTimeoutMs,
			init.limits.maxPendingDialogs,
		);
		this.#clientTools = new Set(init.clientTools ?? []);
		this.toolCalls = new ToolCalls(
			init.id,
			{
				requested: (toolCall) => {
					const { id: toolCallId, name, arguments: args, runId } = toolCall;
					this.#gatewayEvent("tool_call_requested", { toolCallId, name, arguments: args, runId, toolCall });
					this.#channel.pause();
					this.#updateStatus();
				},
				resolved: (toolCall, response) => {
					if (response && this.#process) this.#channel.write(response).catch(() => {});
					const { id: toolCallId, name, runId, status } = toolCall;
					this.#gatewayEvent("tool_call_resolved", { toolCallId, name, runId, status, toolCall });
					this.#answered();
				},
			},
			init.limits.approvalTimeoutMs,
			init.limits.maxPendingDialogs,
		);
		const restored = init.restored;
		this.createdAt = restored?.createdAt ?? new Date();
		if (restored) {
			this.lastActivityAt = restored.lastActivityAt;
			this.piState = restored.piState;
			this.#status = "stopped";
			if (restored.unclean?.live) this.#diedWithGateway(restored.unclean);
		}
	}

	/**
	 * Restored after an unclean stop while it had a pi process, which died with its gateway: the log
	 * begins with how the session's streams end, so a follower resuming into it is not left waiting
	 * for a run that no longer exists (the run it was in is lost, then pi's exit).
	 */
	#diedWithGateway({ why, runId }: UncleanStop): void {
		if (runId !== undefined)
			this.#gatewayEvent("run_lost", {
				runId,
				reason: `${why} while the run was in progress; how it ended was never recorded`,
			});
		this.#gatewayEvent("session_exit", {
			code: null,
			signal: null,
			reason: "lost",
			resumable: this.resumable,
			stderrTail: "",
		});
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
			// A prompt pi accepted whose agent_start has not come yet (a loaded machine: seconds) is a run.
			this.currentRunId === undefined &&
			this.#openRequests === 0 &&
			this.#channel.inFlightCount === 0 &&
			this.queueDepth === 0 &&
			this.#waitingCount === 0
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

	/** A queued command taken out before it reaches pi (its sender gets `reason`); false when none waits under `id`. */
	dropQueued(id: string, reason: GatewayError): boolean {
		return this.#channel.drop(id, reason);
	}

	/** Written to pi and not answered yet (a prompt whose dialog holds pi's answer, say). */
	isInFlight(id: string): boolean {
		return this.#channel.commandOf(id) !== undefined;
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
		const child = new PiProcess({
			...plan,
			cwd: this.cwd,
			openFolder: openCheckedFolder,
			maxLineChars: limits.maxLineChars,
			stderrTailBytes: limits.stderrTailBytes,
		});
		child.route(this.#routeFor(child));
		this.#holdProcess(child);
		this.#ready = this.#start(child);
		return this.#ready;
	}

	/**
	 * Takes a pi another session started and released (`release`): a warm pool's pi, already on this
	 * session's file, for a session that wakes (registry/pooled-wake.ts). It is usable, as after
	 * `start`, once its get_state is answered.
	 */
	adopt(child: PiProcess): Promise<void> {
		if (this.#process) throw new Error(`Session ${this.id} already has a pi process`);
		child.route(this.#routeFor(child));
		this.#holdProcess(child);
		this.#ready = this.#handshake(child);
		return this.#ready;
	}

	/**
	 * Lets go of its pi, unstopped, for another session to `adopt`; from then on this session has no
	 * process and nothing of that pi reaches it. Only a started, quiet pi is given (undefined else).
	 */
	release(): PiProcess | undefined {
		const child = this.#process;
		if (!child || !this.#started || !this.isQuiet) return undefined;
		this.#process = undefined;
		this.#started = false;
		return child;
	}

	/** Where a child's lines go: this session's routing, as long as the child is its current one. */
	#routeFor(child: PiProcess): JsonlHandlers {
		const logger = this.#logger;
		return {
			onLine: (line) => {
				if (child === this.#process) this.#onLine(line);
			},
			onOverflow: (chars, head) => {
				logger.warn({ chars }, "pi printed a line over the cap; dropped");
				this.#gatewayEvent("line_dropped", { chars, reason: "line exceeds maxLineChars" });
				this.#channel.refuseOversized(chars, head);
			},
		};
	}

	#holdProcess(child: PiProcess): void {
		// Synchronously, so the registry counts this child from now on.
		this.#process = child;
		this.exit = undefined;
		// A run of the previous pi ended with it.
		this.currentRunId = undefined;
		this.#started = false;
		this.#setStatus("starting");
		child.exited.then((info) => this.#onExit(child, info));
	}

	async #start(child: PiProcess): Promise<void> {
		try {
			await child.start();
		} catch (error) {
			await child.exited;
			throw spawnError(error);
		}
		await this.#handshake(child);
	}

	/** pi's state once it is up: only then is the session usable. */
	async #handshake(child: PiProcess): Promise<void> {
		const { limits } = this.#init;
		try {
			const state = await this.#channel.dispatch({ type: "get_state" }, limits.startupTimeoutMs);
			this.#takeState(state.data);
			const { sessionName } = this.piState;
			this.piState.sessionName = await this.#legacy.start(this.name, sessionName, limits.startupTimeoutMs);
		} catch (error) {
			child.kill();
			await child.exited;
			throw startError(error, child.stderrTail);
		}
		this.#started = true;
		// Idle from when it can be used: a start that took longer than --idle-timeout-ms (a loaded
		// machine) was hibernated the moment it was up, under the request that had just made it.
		this.lastActivityAt = Date.now();
		this.#updateStatus();
		this.#logger.info({ pid: this.pid }, "session started");
	}

	/**
	 * Sends a command straight to pi, outside the queue, the guard and the state refresh, for the
	 * gateway's own use on a pi no caller holds (a pooled pi before `release`: pooled-wake.ts). A
	 * get_state's answer becomes the session's state.
	 */
	async direct(command: PiCommand): Promise<PiResponse> {
		const response = await this.#channel.dispatch(command, this.#init.limits.startupTimeoutMs);
		if (command.type === "get_state" && response.success) this.#takeState(response.data);
		return response;
	}

	/**
	 * Sends one command and resolves with pi's response. Queued commands wait their turn;
	 * reads and controls go straight to pi so a stuck run can always be inspected and stopped.
	 */
	async request(command: PiCommand): Promise<PiResponse> {
		this.#legacy.assertSupported(command.type);
		const checked = this.#init.guard ? this.#init.guard(command, this) : command;
		// Reading a session (its messages, models, state) is not activity: a person looking at it
		// must not make it the most recent one (the console's list is ordered by this).
		const touches = commandKind(command.type) !== "read";
		if (touches) this.lastActivityAt = Date.now();
		this.#openRequests++;
		try {
			await this.#ensureRunning();
			return await this.#send(checked);
		} finally {
			this.#openRequests--;
			if (touches) this.lastActivityAt = Date.now();
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
			this.toolCalls.cancelAll(toolCallResolvers.abort, "The run was aborted before the program answered");
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
		if (fast !== undefined && fast !== "response" && fast !== "extension_ui_request" && !this.#tracksTool(fast)) {
			this.lastActivityAt = Date.now();
			this.#onEvent(fast, line);
			return;
		}
		const read = readRecord(line);
		if (read.problem !== undefined) {
			this.#logger.warn({ line: read.text.slice(0, 200) }, read.problem);
			return;
		}
		const { record } = read;
		// A response's command touched the session already, or was a read (request()).
		if (record.type !== "response") this.lastActivityAt = Date.now();
		if (record.type === "response") this.#onResponse(record as unknown as PiResponse, line);
		else if (record.type === "extension_ui_request") {
			if (this.#answerQuietly(record as unknown as UiRequest)) return;
			this.events.append(record.type, line);
			this.#onUiRequest(record as unknown as UiRequest);
		} else {
			if (this.#tracksTool(record.type)) this.#onToolExecution(record);
			this.#onEvent(record.type, line);
		}
	}

	/** With client tools, pi's tool executions are read: a client tool call must be one pi is running. */
	#tracksTool(type: string): boolean {
		return this.#clientTools.size > 0 && (type === "tool_execution_start" || type === "tool_execution_end");
	}

	#onToolExecution(record: Record<string, unknown>): void {
		const { toolCallId, toolName } = record;
		if (typeof toolCallId !== "string") return;
		if (record.type === "tool_execution_start" && typeof toolName === "string")
			this.#executing.set(toolCallId, toolName);
		else if (record.type === "tool_execution_end") {
			this.#executing.delete(toolCallId);
			// Ended without the program's answer (its dialog ended some other way): no answer can reach it now.
			this.toolCalls.finishedByPi(toolCallId);
		}
	}

	/**
	 * A dialog with the client-tools title is never an approval. It is a tool call when it names a
	 * declared client tool that pi is running under that id right now (and not asked already);
	 * anything else (a dialog the agent printed as pi) is dismissed and logged.
	 */
	#onClientToolDialog(id: string, prefill: string | undefined): void {
		const request = readClientToolRequest(prefill);
		if (
			request &&
			this.#clientTools.has(request.name) &&
			this.#executing.get(request.toolCallId) === request.name &&
			!this.toolCalls.isPending(request.toolCallId)
		) {
			this.toolCalls.open(id, request, this.currentRunId);
			return;
		}
		this.#logger.warn({ dialogId: id }, "a client tool dialog that matches no tool pi is running: dismissed");
		this.#channel.write({ type: "extension_ui_response", id, cancelled: true }).catch(() => {});
	}

	/** Dialogs and client tool calls both hold the run: the queue's deadlines wait while any is pending. */
	get #waitingCount(): number {
		return this.approvals.pendingCount + this.toolCalls.pendingCount;
	}

	#answered(): void {
		if (this.#waitingCount === 0) this.#channel.resume();
		this.#updateStatus();
	}

	/** A session event: logged as pi printed it; run boundaries move the status. */
	#onEvent(type: string, line: Buffer): void {
		if (type === "agent_start") this.#setRunning(true);
		else if (type === "queue_update") this.#channel.piQueueUpdated(line);
		line = this.#legacy.event(type, line);
		if (type === "agent_settled" && this.#holdsSettle(line)) {
			this.#settleHeld = true;
			return;
		}
		this.events.append(type, line);
		const settled = this.#legacy.settledAfter(type, line);
		if (settled) this.#onEvent("agent_settled", settled);
		if (type === "agent_settled") {
			this.currentRunId = undefined;
			this.#settleHeld = false;
			this.#setRunning(false);
		}
	}

	/** Logs a settle the gate held back (its run is over now). */
	settle(line: Buffer | string): void {
		this.#settleHeld = false;
		this.events.append("agent_settled", line);
		this.currentRunId = undefined;
		this.#setRunning(false);
	}

	#onResponse(piResponse: PiResponse, piLine: Buffer): void {
		const { response, line } = this.#legacy.response(piResponse, piLine, this.#running);
		// Answers to reads belong to the one client that asked; everything else is session history.
		if (commandKind(response.command) !== "read") this.events.append("response", line);
		if (response.command === "prompt" && response.success) {
			const disposition = (response.data as { disposition?: string } | undefined)?.disposition;
			if (disposition === "started" && response.id && !this.#settleHeld) this.currentRunId = response.id;
		}
		if (this.#legacy.unknownCommand(response)) return;
		if (!this.#channel.settle(response) && response.command === "parse") {
			this.#logger.error({ response }, "pi could not parse a command");
		}
	}

	/** Adds a hook asked before each agent_settled is logged (true holds it back); returns its remover. */
	beforeSettle(hook: (line: Buffer | string) => boolean): () => void {
		this.#settleHooks.add(hook);
		return () => this.#settleHooks.delete(hook);
	}

	/** Every hook is asked (each may flush its own event first), not just until one holds. */
	#holdsSettle(line: Buffer | string): boolean {
		let hold = false;
		for (const hook of [...this.#settleHooks]) if (hook(line)) hold = true;
		return hold;
	}

	/** A dialog the gateway answers itself (quietDialog): dismissed when its promise settles, never logged. */
	#answerQuietly(request: UiRequest): boolean {
		const when = this.quietDialog?.(request);
		if (!when) return false;
		const child = this.#process;
		const dismiss = () => {
			if (child && child === this.#process)
				this.#channel.write({ type: "extension_ui_response", id: request.id, cancelled: true }).catch(() => {});
		};
		when.then(dismiss, dismiss);
		return true;
	}

	#onUiRequest(request: UiRequest): void {
		if (isDialogRequest(request) && request.title === clientToolDialogTitle)
			this.#onClientToolDialog(request.id, request.method === "editor" ? request.prefill : undefined);
		else if (isDialogRequest(request)) this.approvals.open(request);
		else if (fireAndForgetMethods.has(request.method))
			applyUiRequest(this.ui, request, this.#init.limits.maxNotifications);
	}

	#onExit(child: PiProcess, info: ExitInfo): void {
		if (child !== this.#process) return;
		this.#process = undefined;
		this.#settleHeld = false;
		const reason = this.#stopping;
		this.#stopping = undefined;
		this.exit = { ...info, at: new Date().toISOString(), stderrTail: child.stderrTail };
		const crashed = !info.requested && !(info.code === 0 && info.signal === null);
		this.#channel.failAll(exitError(this.id, reason, crashed, info, this.exit.stderrTail));
		this.approvals.abandonAll();
		this.toolCalls.abandonAll();
		this.#executing.clear();
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
			!this.#started ? "starting" : this.#waitingCount > 0 ? "waiting" : this.#running ? "running" : "idle",
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
		// The session's folder is the one checked at create and bound into pi's sandbox; a switch to
		// a file whose header names another folder does not move it. pi's word (and a header the
		// agent can write) once moved it to another principal's folder for the files API.
		const state = piStateOf(data, this.piState);
		this.piState = state;
		if (state.sessionName) this.name = state.sessionName;
	}

	#assertAlive(): void {
		const error = this.#process ? undefined : notRunningError(this.id, this.#status, this.exit);
		if (error) throw error;
	}
}
