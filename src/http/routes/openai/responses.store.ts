import type { OpenAIResponse } from "./responses.schemas.ts";

/** How many responses are kept for each principal (its own last ones, in memory), and how much of them. */
export const keptPerPrincipal = 1000;
export const keptCharsPerPrincipal = 32 * 1024 * 1024;

/** A background response's run, while it goes: cancel aborts it, `ended` settles once it stopped. */
export interface BackgroundRun {
	cancel(): void;
	ended: Promise<void>;
}

interface Entry {
	response: OpenAIResponse;
	background?: BackgroundRun;
	/** Its JSON's length: what it holds of the principal's `keptCharsPerPrincipal`. */
	chars: number;
}

const charsOf = (response: OpenAIResponse) => JSON.stringify(response).length;

/**
 * The responses GET, cancel and DELETE answer, kept per principal: each principal's last
 * `keptPerPrincipal` within `keptCharsPerPrincipal`, so that one principal making many (or large)
 * responses forgets only its own, oldest first, and never one whose background run still goes (a
 * restart forgets them all; their sessions stay). A principal reads only its own responses,
 * whatever its scopes.
 */
export class ResponseStore {
	readonly #byPrincipal = new Map<string, Map<string, Entry>>();
	readonly #chars = new Map<string, number>();

	save(principal: string, response: OpenAIResponse, background?: BackgroundRun): void {
		const mine = this.#byPrincipal.get(principal) ?? new Map<string, Entry>();
		this.#byPrincipal.set(principal, mine);
		const entry = mine.get(response.id);
		if (entry) this.#forget(principal, mine, response.id);
		const chars = charsOf(response);
		mine.set(response.id, { response, background: background ?? entry?.background, chars });
		this.#chars.set(principal, (this.#chars.get(principal) ?? 0) + chars);
		this.#trim(principal, mine);
	}

	/** A background run's updates: saved only while the response is still kept (not deleted meanwhile). */
	update(principal: string, response: OpenAIResponse): void {
		const mine = this.#byPrincipal.get(principal);
		const entry = mine?.get(response.id);
		if (!mine || !entry) return;
		const chars = charsOf(response);
		this.#chars.set(principal, (this.#chars.get(principal) ?? 0) - entry.chars + chars);
		Object.assign(entry, { response, chars });
		this.#trim(principal, mine);
	}

	/** Oldest first, past either bound, skipping runs still going (their sessions' limits bound those). */
	#trim(principal: string, mine: Map<string, Entry>): void {
		const over = () => mine.size > keptPerPrincipal || (this.#chars.get(principal) ?? 0) > keptCharsPerPrincipal;
		if (!over()) return;
		const newest = [...mine.keys()].at(-1);
		for (const [id, entry] of mine) {
			if (!over()) return;
			if (!entry.background && id !== newest) this.#forget(principal, mine, id);
		}
	}

	#forget(principal: string, mine: Map<string, Entry>, id: string): void {
		const entry = mine.get(id);
		if (!entry) return;
		mine.delete(id);
		this.#chars.set(principal, (this.#chars.get(principal) ?? 0) - entry.chars);
	}

	ended(principal: string, id: string): void {
		const entry = this.#byPrincipal.get(principal)?.get(id);
		if (entry) entry.background = undefined;
	}

	get(principal: string, id: string): Entry | undefined {
		return this.#byPrincipal.get(principal)?.get(id);
	}

	delete(principal: string, id: string): boolean {
		const mine = this.#byPrincipal.get(principal);
		const had = mine?.has(id) ?? false;
		if (mine && had) this.#forget(principal, mine, id);
		if (mine?.size === 0) {
			this.#byPrincipal.delete(principal);
			this.#chars.delete(principal);
		}
		return had;
	}
}
