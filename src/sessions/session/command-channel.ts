import PQueue from "p-queue";
import type { PiProcess } from "../../pi/child.ts";
import { encodeLine } from "../../pi/jsonl.ts";
import { commandKind, type PiCommand, type PiResponse } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import { InFlight } from "./in-flight.ts";
import type { SessionLimits } from "./session-types.ts";

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

/** What the channel needs from its session: the current child, whether it may send, where state goes. */
export interface ChannelHost {
	readonly id: string;
	readonly limits: SessionLimits;
	/** The current pi child; undefined while stopped. */
	process(): PiProcess | undefined;
	/** Throws the documented error when there is no pi to send to. */
	assertAlive(): void;
	/** pi's get_state answer, after a command that changes it. */
	takeState(data: unknown): void;
}

/**
 * The way commands reach pi and answers come back: the per-session queue, the commands in
 * flight and their ids, pi's own steering/follow-up queue length, answers too large to read,
 * and the get_state refresh after a command that changes pi's state.
 */
export class CommandChannel {
	readonly #host: ChannelHost;
	readonly #queue = new PQueue({ concurrency: 1 });
	readonly #inFlight = new InFlight();
	#nextId = 0;
	#piQueued = 0;
	/** Queued commands not yet written to pi, by id: `drop` takes one out before it reaches pi. */
	readonly #waiting = new Map<string, AbortController>();
	/** How the last pi ended, for the commands that were queued for it. */
	#exitError: GatewayError | undefined;

	constructor(host: ChannelHost) {
		this.#host = host;
	}

	get queueDepth(): number {
		return this.#queue.size + this.#queue.pending;
	}

	/** Commands written to pi and not yet answered. */
	get inFlightCount(): number {
		return this.#inFlight.size;
	}

	/** Messages waiting in pi's steering and follow-up queues, as of its last queue_update. */
	get piQueued(): number {
		return this.#piQueued;
	}

	nextCommandId(): string {
		return `gw_${(++this.#nextId).toString(36)}`;
	}

	/** Deadlines stop while a dialog is open: pi may hold an answer until a person answers. */
	pause(): void {
		this.#inFlight.pause();
	}

	resume(): void {
		this.#inFlight.resume();
	}

	/** Queued commands wait their turn; reads and controls go straight to pi. */
	async send(command: PiCommand, timeout: number): Promise<PiResponse> {
		if (commandKind(command.type) !== "queued") return this.dispatch(command, timeout);
		const queuesInPi = queuesMessage(command);
		this.#assertRoom(queuesInPi);
		const child = this.#host.process();
		const { id } = command;
		const waiting = new AbortController();
		if (id !== undefined) this.#waiting.set(id, waiting);
		const forget = () => {
			if (id !== undefined && this.#waiting.get(id) === waiting) this.#waiting.delete(id);
		};
		const response = (await this.#queue
			.add(
				() => {
					forget();
					// The pi this command was queued for is gone: it gets that pi's end, not the next pi.
					if (this.#host.process() !== child) throw this.#exitError ?? new GatewayError(502, "pi_exited", "pi exited");
					// pi's own queue may have grown while this waited its turn.
					if (queuesInPi) this.#assertRoom(true, 1);
					return this.dispatch(command, timeout);
				},
				{ signal: waiting.signal },
			)
			.finally(forget)) as PiResponse;
		if (stateChangingCommands.has(command.type) && response.success) this.#refreshState();
		return response;
	}

	/**
	 * Takes the queued command `id` out of the queue before it is written to pi: its sender gets
	 * `reason`. False when no such command waits (it reached pi already, or never was queued).
	 */
	drop(id: string, reason: GatewayError): boolean {
		const waiting = this.#waiting.get(id);
		if (!waiting) return false;
		this.#waiting.delete(id);
		waiting.abort(reason);
		return true;
	}

	/**
	 * --max-queued bounds what waits: the gateway's queue, and for steer/follow-up messages also
	 * pi's own steering and follow-up queue (which they join, and which the gateway's queue
	 * never sees grow: pi accepts each at once). `self` is 1 when the command is itself counted.
	 */
	#assertRoom(queuesInPi: boolean, self = 0): void {
		const max = this.#host.limits.maxQueued;
		const waiting = this.queueDepth - self + (queuesInPi ? this.#piQueued : 0);
		if (waiting < max) return;
		const inPi =
			queuesInPi && this.#piQueued > 0 ? ` (${this.#piQueued} of them steer/follow-up messages inside pi)` : "";
		throw new GatewayError(429, "queue_full", `Session ${this.#host.id} already has ${waiting} commands queued${inPi}`);
	}

	async dispatch(command: PiCommand, timeoutMs: number): Promise<PiResponse> {
		this.#host.assertAlive();
		const id = command.id ?? this.nextCommandId();
		const line = encodeLine({ ...command, id });
		const response = this.#inFlight.add(id, command, timeoutMs);
		const child = this.#host.process();
		try {
			await this.write(line);
		} catch {
			// A pipe that broke means pi is going: its exit (crashed or exited) fails this command
			// with the right code; the fallback is for a child that was already gone.
			await child?.exited;
			this.#inFlight.fail(id, new GatewayError(502, "pi_exited", "pi exited before it read the command"));
		}
		return response;
	}

	write(record: string | Record<string, unknown>): Promise<void> {
		const child = this.#host.process();
		if (!child) return Promise.reject(new Error("pi is not running"));
		return child.write(typeof record === "string" ? record : encodeLine(record));
	}

	/** pi's answer to a command in flight; false when nothing waited for it. */
	settle(response: PiResponse): boolean {
		return this.#inFlight.settle(response);
	}

	/** The command in flight under this id, if any. */
	commandOf(id: string): PiCommand | undefined {
		return this.#inFlight.commandOf(id);
	}

	/**
	 * pi 0.73 answers a command it does not know without its id: the oldest one of that type in
	 * flight fails with `error` now instead of at its deadline. False when none waits.
	 */
	failOldest(type: string, error: GatewayError): boolean {
		const id = this.#inFlight.oldestOf(type);
		if (!id) return false;
		this.#inFlight.fail(id, error);
		return true;
	}

	/** A queue_update event: both of pi's queues, complete. */
	piQueueUpdated(line: Buffer): void {
		this.#piQueued = queueLength(line);
	}

	/**
	 * A line over the cap is dropped unread; if it was the answer to a pending command, that
	 * command fails now (502) instead of waiting for its deadline.
	 */
	refuseOversized(chars: number, head: string): void {
		if (!/"type"\s*:\s*"response"/.test(head)) return;
		const id = /"id"\s*:\s*"([^"\\]{1,64})"/.exec(head)?.[1];
		const command = id ? this.#inFlight.commandOf(id) : undefined;
		if (!id || !command) return;
		const limit = this.#host.limits.maxLineChars;
		this.#inFlight.fail(
			id,
			new GatewayError(
				502,
				"pi_answer_too_large",
				`pi's answer to ${command.type} was ${chars} characters, over the gateway's limit of ${limit} (maxLineChars)`,
			),
		);
	}

	/**
	 * pi is gone. In flight: failed now. Queued: each meets this error when its turn comes (see
	 * send), at once, since nothing ahead of it waits any more; p-queue's clear() would reject
	 * with AbortError.
	 */
	failAll(error: GatewayError): void {
		this.#exitError = error;
		this.#inFlight.failAll(error);
		this.#piQueued = 0;
	}

	#refreshState(): void {
		this.dispatch({ type: "get_state" }, this.#host.limits.commandTimeoutMs).then(
			(response) => this.#host.takeState(response.data),
			() => {},
		);
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
