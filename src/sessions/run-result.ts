import type { LoggedEvent } from "./event-log.ts";
import type { Session } from "./session.ts";

export interface RunResult {
	runId: string;
	aborted: boolean;
	messages: unknown[];
	text: string | null;
	stopReason: string | null;
	usage: unknown;
	firstEventId: number;
	lastEventId: number;
}

type Message = { role?: string; content?: unknown; stopReason?: string; usage?: unknown };

/** Folds a run's events into what a caller of wait mode wants: new messages, final text, usage. */
export class RunCollector {
	readonly #runId: string;
	readonly #firstEventId: number;
	#messages: Message[] = [];
	#aborted = false;
	#lastEventId: number;

	constructor(runId: string, firstEventId: number) {
		this.#runId = runId;
		this.#firstEventId = firstEventId;
		this.#lastEventId = firstEventId;
	}

	/** Returns true once the run settled. */
	add(event: LoggedEvent): boolean {
		this.#lastEventId = event.seq;
		if (event.type === "message_end") {
			const message = (JSON.parse(event.data) as { message: Message }).message;
			if (message.role !== "system") this.#messages.push(message);
		} else if (event.type === "agent_settled") {
			this.#aborted = (JSON.parse(event.data) as { aborted?: boolean }).aborted === true;
			return true;
		}
		return false;
	}

	result(): RunResult {
		const last = this.#messages.findLast((m) => m.role === "assistant");
		const textOf = (m: Message | undefined) =>
			Array.isArray(m?.content)
				? (m.content as { type: string; text?: string }[])
						.filter((b) => b.type === "text")
						.map((b) => b.text)
						.join("")
				: null;
		const lastWithText = this.#messages.findLast((m) => m.role === "assistant" && textOf(m));
		return {
			runId: this.#runId,
			aborted: this.#aborted,
			messages: this.#messages,
			text: textOf(lastWithText) ?? null,
			stopReason: last?.stopReason ?? null,
			usage: last?.usage ?? null,
			firstEventId: this.#firstEventId,
			lastEventId: this.#lastEventId,
		};
	}
}

/** Index of the response to command `id` within `events`, or -1. */
export function responseIndex(events: LoggedEvent[], id: string): number {
	const needle = `"id":"${id}"`;
	return events.findIndex((e) => e.type === "response" && e.data.includes(needle));
}

/**
 * Waits for the run that command `runId` joined to settle, scanning from `startSeq`.
 * Resolves undefined when `timeoutMs` passes first (the run goes on).
 */
export function waitForRun(session: Session, runId: string, startSeq: number, timeoutMs: number, signal?: AbortSignal) {
	return new Promise<RunResult | undefined>((resolve) => {
		let collector: RunCollector | undefined;
		const feed = (event: LoggedEvent): boolean => {
			if (!collector) {
				if (event.type === "response" && event.data.includes(`"id":"${runId}"`))
					collector = new RunCollector(runId, event.seq);
				return false;
			}
			return collector.add(event) || event.type === "session_exit";
		};
		let unsubscribe = () => {};
		const finish = (settled: boolean) => {
			clearTimeout(timer);
			unsubscribe();
			signal?.removeEventListener("abort", onAbort);
			resolve(settled && collector ? collector.result() : undefined);
		};
		const onAbort = () => finish(false);
		const timer = setTimeout(() => finish(false), timeoutMs);
		for (const event of session.log.since(startSeq).events) if (feed(event)) return finish(true);
		unsubscribe = session.log.subscribe((event) => {
			if (feed(event)) finish(true);
		});
		signal?.addEventListener("abort", onAbort);
	});
}
