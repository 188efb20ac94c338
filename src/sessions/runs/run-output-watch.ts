import { eventJson, type LoggedEvent } from "../events/event-log.ts";
import type { Session } from "../session/session.ts";
import { checkAnswer, maxRepairTurns, type OutputSpec, repairPrompt } from "./run-output.ts";
import { RunWatch } from "./run-result.ts";

/**
 * Structured output over one run: reads the run's last assistant text as pi settles it, and when it
 * does not validate, holds that `agent_settled` back (Session.beforeSettle) and sends a repair prompt,
 * so the user-visible run goes on, at most `maxRepairTurns` times. Then it logs `run_output`
 * (`output`, or `error: {message, attempts}`) and lets the settle through: streams and wait mode
 * see the answer before the run's end.
 */
export class OutputWatch {
	readonly #session: Session;
	readonly #runId: string;
	readonly #spec: OutputSpec;
	readonly #watch: RunWatch;
	readonly #unsubscribe: () => void;
	readonly #unhook: () => void;
	#lastText: string | null = null;
	#attempts = 0;
	#done = false;
	#limited = false;

	constructor(session: Session, runId: string, spec: OutputSpec) {
		this.#session = session;
		this.#runId = runId;
		this.#spec = spec;
		this.#watch = new RunWatch(session, runId);
		this.#unsubscribe = session.events.subscribe((event) => this.#feed(event));
		this.#unhook = session.beforeSettle((line) => this.onSettle(line));
	}

	#feed(event: LoggedEvent): void {
		if (this.#watch.feed(event)) {
			this.dispose();
			return;
		}
		// A run limit stopped the run: no repair turn may follow (run-limits.ts logs it before the settle).
		if (event.type === "run_limit_reached" && eventJson<{ runId?: string }>(event).runId === this.#runId)
			this.#limited = true;
		if (event.type !== "message_end") return;
		const { message } = eventJson<{ message?: { role?: string; content?: unknown } }>(event);
		if (message?.role !== "assistant" || !Array.isArray(message.content)) return;
		const text = (message.content as { type?: string; text?: unknown }[])
			.filter((block) => block.type === "text" && typeof block.text === "string")
			.map((block) => block.text)
			.join("");
		if (text !== "") this.#lastText = text;
	}

	/** pi settled: true holds the settle back for a repair turn. */
	onSettle(line: Buffer | string): boolean {
		if (this.#done || !this.#watch.responded || this.#watch.outcome) return false;
		this.#attempts++;
		const aborted = this.#limited || JSON.parse(line.toString()).aborted === true;
		const checked = checkAnswer(this.#spec, this.#lastText);
		if (checked.ok) return this.#finish({ output: checked.value });
		if (aborted || this.#attempts > maxRepairTurns) {
			const stopped = this.#limited ? "a run limit stopped the run" : "the run was aborted";
			const why = aborted ? `${stopped} before a valid answer (${checked.problem})` : checked.problem;
			return this.#finish({ error: { message: why, attempts: this.#attempts } });
		}
		this.#lastText = null;
		const repair = { type: "prompt" as const, message: repairPrompt(this.#spec, checked.problem) };
		this.#session.request(repair).then(
			(response) => {
				if (!response.success) this.#giveUp(line, `the repair turn was refused: ${response.error ?? "by pi"}`);
			},
			(error: unknown) => this.#giveUp(line, `the repair turn could not be sent: ${(error as Error).message}`),
		);
		return true;
	}

	/** A repair that did not start a run: the held settle ends the run with the last problem. */
	#giveUp(line: Buffer | string, why: string): void {
		if (this.#done) return;
		this.#finish({ error: { message: why, attempts: this.#attempts } });
		if (this.#session.isRunning) this.#session.settle(line);
	}

	#finish(outcome: { output: unknown } | { error: { message: string; attempts: number } }): false {
		this.#done = true;
		const session = this.#session;
		const event = { type: "run_output", sessionId: session.id, runId: this.#runId, ...outcome };
		session.events.append("run_output", JSON.stringify(event));
		this.dispose();
		return false;
	}

	dispose(): void {
		this.#unsubscribe();
		this.#unhook();
	}
}
