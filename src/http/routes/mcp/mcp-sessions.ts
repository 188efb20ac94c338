import { randomBytes } from "node:crypto";
import { shareFor } from "../../../config/config.ts";
import { ApiError } from "../../transport/problem.ts";

/** What the table needs of an MCP session: ending it (its transport and server). */
export interface McpSessionHandle {
	close(): Promise<void>;
}

interface Entry<T extends McpSessionHandle> {
	id: string;
	principal: string;
	session: T;
	/** When a request last reached it (ms). */
	usedAt: number;
	/** Requests it is answering now (a tool call can take minutes): such a session is never idle. */
	busy: number;
}

export interface McpSessionLimits {
	/** MCP sessions at most, every principal's together. */
	max: number;
	/** One principal's share (the operator's token holds the whole cap). */
	share: number;
	/** A session no request reached for this long ends. */
	idleMs: number;
}

/**
 * The MCP sessions of this gateway (Mcp-Session-Id), each bound to the principal that opened it:
 * to anyone else its id is unknown. Held in fair shares (DESIGN, "Fair shares"): a principal at its
 * share gives up its own least recently used idle session for a new one, past the cap the principal
 * that holds the most does, and a session no request reached for `idleMs` ends. A session answering
 * a request is never ended to make room: then a new one is a 429.
 */
export class McpSessions<T extends McpSessionHandle> {
	readonly #entries = new Map<string, Entry<T>>();
	readonly #limits: McpSessionLimits;
	#sweep: NodeJS.Timeout | undefined;

	constructor(limits: McpSessionLimits) {
		this.#limits = limits;
	}

	get size(): number {
		return this.#entries.size;
	}

	/** The session `id` if `principal` opened it and it has not expired; undefined otherwise (a 404). */
	get(id: string, principal: string): T | undefined {
		this.#expire();
		const entry = this.#entries.get(id);
		if (!entry || entry.principal !== principal) return undefined;
		entry.usedAt = Date.now();
		return entry.session;
	}

	/**
	 * Makes room for one more session of `principal` (ending idle ones as the shares say) and adds the
	 * one `make` builds with a fresh id; 429 when only busy sessions could make room.
	 */
	open(principal: string, make: (id: string) => T): { id: string; session: T } {
		this.#expire();
		const mine = [...this.#entries.values()].filter((e) => e.principal === principal);
		const share = shareFor(principal, this.#limits.share, this.#limits.max);
		if (mine.length >= share && !this.#endIdlest(mine))
			throw new ApiError(
				429,
				"mcp_sessions_limit",
				`${principal} has ${mine.length} MCP sessions answering requests (at most ${share}, --mcp-max-sessions-per-principal); end one (DELETE /mcp) or wait`,
			);
		if (this.#entries.size >= this.#limits.max && !this.#endIdlest(this.#largestHolding()))
			throw new ApiError(
				429,
				"mcp_sessions_limit",
				`The gateway holds ${this.#entries.size} MCP sessions, all answering requests (--mcp-max-sessions); try again later`,
			);
		const id = `mcp_${randomBytes(18).toString("base64url")}`;
		const session = make(id);
		this.#entries.set(id, { id, principal, session, usedAt: Date.now(), busy: 0 });
		this.#schedule();
		return { id, session };
	}

	/** Marks `id` busy while `work` runs, so it is neither idle nor given up for room. */
	async using<R>(id: string, work: () => Promise<R>): Promise<R> {
		const entry = this.#entries.get(id);
		if (entry) entry.busy++;
		try {
			return await work();
		} finally {
			if (entry) {
				entry.busy--;
				entry.usedAt = Date.now();
			}
		}
	}

	/** Forgets `id` (its transport closed: DELETE /mcp, or it was ended here). */
	remove(id: string): void {
		this.#entries.delete(id);
		if (this.#entries.size === 0) this.#stopSweep();
	}

	/** Ends the least recently used idle session among `entries`; false when every one is busy. */
	#endIdlest(entries: Entry<T>[]): boolean {
		const idle = entries.filter((e) => e.busy === 0).sort((a, b) => a.usedAt - b.usedAt)[0];
		if (!idle) return false;
		this.#end(idle);
		return true;
	}

	/** The sessions of the principal holding the most. */
	#largestHolding(): Entry<T>[] {
		const by = new Map<string, Entry<T>[]>();
		for (const e of this.#entries.values()) by.set(e.principal, [...(by.get(e.principal) ?? []), e]);
		return [...by.values()].sort((a, b) => b.length - a.length)[0] ?? [];
	}

	#end(entry: Entry<T>): void {
		this.remove(entry.id);
		void entry.session.close().catch(() => {});
	}

	#expire(): void {
		const before = Date.now() - this.#limits.idleMs;
		for (const entry of [...this.#entries.values()]) if (entry.busy === 0 && entry.usedAt <= before) this.#end(entry);
	}

	/** A timer only while sessions exist, so an idle gateway (or a test's app) holds none. */
	#schedule(): void {
		if (this.#sweep) return;
		const every = Math.max(1000, Math.min(60_000, Math.floor(this.#limits.idleMs / 4)));
		this.#sweep = setInterval(() => this.#expire(), every);
		this.#sweep.unref();
	}

	#stopSweep(): void {
		clearInterval(this.#sweep);
		this.#sweep = undefined;
	}
}
