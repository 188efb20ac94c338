import { eventJson, eventText, type LoggedEvent } from "../events/event-log.ts";
import type { Session } from "../session/session.ts";

export type Disposition = "started" | "queued" | "handled";

/**
 * How a command's run ended: `settled` (agent_settled), `handled` (an extension command consumed
 * the prompt: no run), `idle` (a steer or follow-up queued while no run was active: it waits for
 * the next prompt), `refused` (pi answered success:false), `exited` (pi exited first).
 */
export type RunOutcome = "settled" | "handled" | "idle" | "refused" | "exited";

const leadingId = /^\{"id":"((?:[^"\\]|\\.)*)"/;

/** The `id` of a logged `response` (pi writes it first, so usually no parse is needed). */
export function responseId(event: LoggedEvent): string | undefined {
	if (event.type !== "response") return undefined;
	const text = eventText(event);
	const match = leadingId.exec(text);
	if (match) return match[1];
	return (JSON.parse(text) as { id?: string }).id;
}

/**
 * Decides, event by event in log order, where the run that command `id` started or joined ends:
 * after pi's response to it for a handled, refused or idle-queued command, else at the next
 * `agent_settled` after that response. Fed from a log listener, so the session's state is read
 * at the moment the response is appended.
 */
export class RunWatch {
	readonly #session: Session;
	readonly #id: string;
	disposition: Disposition | undefined;
	outcome: RunOutcome | undefined;
	responded = false;

	constructor(session: Session, id: string) {
		this.#session = session;
		this.#id = id;
	}

	/** True when `event` is the run's last. */
	feed(event: LoggedEvent): boolean {
		if (this.outcome) return false;
		// Only once pi took the command: an exit before it was sent (an idle hibernation between the
		// watch's start and the send) is followed by the wake that sends it, and an exit after it was
		// sent fails the command itself.
		if (event.type === "session_exit" && this.responded) return this.#end("exited");
		if (!this.responded) {
			if (event.type !== "response" || responseId(event) !== this.#id) return false;
			this.responded = true;
			const response = eventJson<{ success: boolean; data?: { disposition?: Disposition } }>(event);
			if (!response.success) return this.#end("refused");
			this.disposition = response.data?.disposition ?? "queued";
			if (this.disposition === "handled") return this.#end("handled");
			if (this.disposition === "queued" && !this.#session.isRunning && this.#session.currentRunId === undefined)
				return this.#end("idle");
			return false;
		}
		return event.type === "agent_settled" && this.#end("settled");
	}

	#end(outcome: RunOutcome): true {
		this.outcome = outcome;
		return true;
	}
}

export interface RunResult {
	runId: string;
	aborted: boolean;
	messages: unknown[];
	text: string | null;
	stopReason: string | null;
	usage: unknown;
	firstEventId: number;
	lastEventId: number;
	/** Structured output (run_output): the value that validated, or why none did; never both. */
	output?: unknown;
	outputError?: { message: string; attempts: number };
	/** The run limit that stopped the run (run_limit_reached). */
	limit?: { kind: string; allowed: number; used: number };
}

type Message = { role?: string; content?: unknown; stopReason?: string; usage?: unknown };

function textOf(message: Message | undefined): string | null {
	if (!Array.isArray(message?.content)) return null;
	const blocks = message.content as { type: string; text?: string }[];
	return blocks
		.filter((b) => b.type === "text")
		.map((b) => b.text)
		.join("");
}

/**
 * Folds a run's events into what a caller of wait mode wants: the messages completed since the
 * command was sent, the last assistant text, stop reason and usage. Parses only message_end and
 * agent_settled, never the deltas.
 */
export class RunCollector {
	readonly #runId: string;
	#firstEventId: number | undefined;
	#lastEventId: number;
	#messages: Message[] = [];
	#aborted = false;
	/** This run's run_output and run_limit_reached, as logged. */
	#control: Pick<RunResult, "output" | "outputError" | "limit"> = {};

	constructor(runId: string, startSeq: number) {
		this.#runId = runId;
		this.#lastEventId = startSeq;
	}

	add(event: LoggedEvent): void {
		this.#firstEventId ??= event.seq;
		this.#lastEventId = event.seq;
		if (event.type === "message_end") {
			const message = eventJson<{ message: Message }>(event).message;
			if (message.role !== "system") this.#messages.push(message);
		} else if (event.type === "agent_settled") {
			this.#aborted = eventJson<{ aborted?: boolean }>(event).aborted === true;
		} else if (event.type === "run_output" || event.type === "run_limit_reached") {
			const fields = eventJson<{ runId?: string; output?: unknown; error?: RunResult["outputError"] } & RunResult>(
				event,
			);
			if (fields.runId !== this.#runId) return;
			if (fields.error) this.#control.outputError = fields.error;
			else if ("output" in fields) this.#control.output = fields.output;
			if (fields.limit) this.#control.limit = fields.limit;
		}
	}

	result(): RunResult {
		const assistants = this.#messages.filter((m) => m.role === "assistant");
		const last = assistants.at(-1);
		return {
			runId: this.#runId,
			aborted: this.#aborted,
			messages: this.#messages,
			text: textOf(assistants.findLast((m) => textOf(m))) ?? null,
			stopReason: last?.stopReason ?? null,
			usage: last?.usage ?? null,
			firstEventId: this.#firstEventId ?? this.#lastEventId,
			lastEventId: this.#lastEventId,
			...this.#control,
		};
	}
}
