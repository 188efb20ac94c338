import type { OpenAIResponse } from "./responses.schemas.ts";

/** How many responses are kept for each principal: its own last ones, in memory. */
export const keptPerPrincipal = 1000;

/** A background response's run, while it goes: cancel aborts it, `ended` settles once it stopped. */
export interface BackgroundRun {
	cancel(): void;
	ended: Promise<void>;
}

interface Entry {
	response: OpenAIResponse;
	background?: BackgroundRun;
}

/**
 * The responses GET, cancel and DELETE answer, kept per principal: each principal's last
 * `keptPerPrincipal`, so that one principal making many responses forgets only its own (a restart
 * forgets them all; their sessions stay). A principal reads only its own responses, whatever its scopes.
 */
export class ResponseStore {
	readonly #byPrincipal = new Map<string, Map<string, Entry>>();

	save(principal: string, response: OpenAIResponse, background?: BackgroundRun): void {
		const mine = this.#byPrincipal.get(principal) ?? new Map<string, Entry>();
		this.#byPrincipal.set(principal, mine);
		const entry = mine.get(response.id);
		mine.delete(response.id);
		mine.set(response.id, { response, background: background ?? entry?.background });
		while (mine.size > keptPerPrincipal) mine.delete(mine.keys().next().value as string);
	}

	/** A background run's updates: saved only while the response is still kept (not deleted meanwhile). */
	update(principal: string, response: OpenAIResponse): void {
		const entry = this.#byPrincipal.get(principal)?.get(response.id);
		if (entry) entry.response = response;
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
		const had = mine?.delete(id) ?? false;
		if (mine?.size === 0) this.#byPrincipal.delete(principal);
		return had;
	}
}
