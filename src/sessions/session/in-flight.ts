import type { PiCommand, PiResponse } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";

interface Pending {
	command: PiCommand;
	timeoutMs: number;
	resolve(response: PiResponse): void;
	reject(error: Error): void;
	remainingMs: number;
	startedAt: number;
	timer?: NodeJS.Timeout;
}

/**
 * Commands sent to pi and not yet answered, by gateway id: each settles with pi's response, its
 * deadline (504), or a failure the session reports (pi gone: 502). Deadlines pause while a dialog
 * is open, because pi may hold a response until a person answers.
 */
export class InFlight {
	readonly #pending = new Map<string, Pending>();
	#paused = false;

	get size(): number {
		return this.#pending.size;
	}

	commandOf(id: string): PiCommand | undefined {
		return this.#pending.get(id)?.command;
	}

	/** The oldest pending command of this type: the one an id-less answer about that type is for. */
	oldestOf(type: string): string | undefined {
		for (const [id, pending] of this.#pending) if (pending.command.type === type) return id;
		return undefined;
	}

	/** Registers `id` and returns the promise of its response. */
	add(id: string, command: PiCommand, timeoutMs: number): Promise<PiResponse> {
		return new Promise<PiResponse>((resolve, reject) => {
			const pending: Pending = { command, timeoutMs, resolve, reject, remainingMs: timeoutMs, startedAt: Date.now() };
			this.#pending.set(id, pending);
			if (!this.#paused) this.#arm(id, pending);
		});
	}

	/** Settles the command pi answered; false when nobody waits for that id (late, or unknown). */
	settle(response: PiResponse): boolean {
		const pending = response.id ? this.#pending.get(response.id) : undefined;
		if (!pending) return false;
		clearTimeout(pending.timer);
		this.#pending.delete(response.id as string);
		pending.resolve(response);
		return true;
	}

	fail(id: string, error: Error): void {
		const pending = this.#pending.get(id);
		if (!pending) return;
		clearTimeout(pending.timer);
		this.#pending.delete(id);
		pending.reject(error);
	}

	failAll(error: Error): void {
		for (const id of [...this.#pending.keys()]) this.fail(id, error);
	}

	pause(): void {
		this.#paused = true;
		const now = Date.now();
		for (const pending of this.#pending.values()) {
			if (!pending.timer) continue;
			clearTimeout(pending.timer);
			pending.timer = undefined;
			pending.remainingMs = Math.max(0, pending.remainingMs - (now - pending.startedAt));
		}
	}

	resume(): void {
		this.#paused = false;
		for (const [id, pending] of this.#pending) if (!pending.timer) this.#arm(id, pending);
	}

	#arm(id: string, pending: Pending): void {
		pending.startedAt = Date.now();
		pending.timer = setTimeout(() => {
			const seconds = Math.round(pending.timeoutMs / 100) / 10;
			this.fail(
				id,
				new GatewayError(504, "pi_timeout", `pi did not answer ${pending.command.type} within ${seconds}s`),
			);
		}, pending.remainingMs);
		pending.timer.unref();
	}
}
