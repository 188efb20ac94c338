import { rmdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Area } from "./areas.ts";
import type { Session } from "./session.ts";

/** A pooled pi process, and how to remove what its start made (its empty folder) once it is not used. */
export interface Pooled {
	session: Session;
	/** Folders made for it, removed when empty after it stopped unused. */
	folders: string[];
}

/** Removes the folders a pooled process was given, when nothing was put in them. */
export function removeEmpty(folders: string[]): void {
	for (const folder of folders)
		try {
			rmdirSync(folder);
		} catch {}
}

/**
 * Keeps `size` pi processes of one area started with the default options, so a session that asks
 * for nothing special skips pi's ~0.3 s start. Taking one refills the pool in the background;
 * a pooled process that dies is replaced. Pooled processes count against the live-process cap, but
 * yield to sessions: the pool fills only while there is room, and a start at the cap stops a pooled
 * process before it hibernates anyone's session (registry.ts).
 */
class AreaPool {
	readonly #size: number;
	readonly #create: () => Promise<Pooled>;
	readonly #logger: Logger;
	readonly #room: () => boolean;
	readonly #ready: Pooled[] = [];
	readonly #starting = new Set<Promise<unknown>>();
	#closed = false;

	constructor(size: number, create: () => Promise<Pooled>, logger: Logger, room: () => boolean) {
		this.#size = size;
		this.#create = create;
		this.#logger = logger;
		this.#room = room;
	}

	get size(): number {
		return this.#ready.length + this.#starting.size;
	}

	get ready(): readonly Pooled[] {
		return this.#ready;
	}

	take(): Session | undefined {
		let pooled = this.#ready.shift();
		while (pooled && !(pooled.session.isAlive && pooled.session.hasProcess)) pooled = this.#ready.shift();
		// The registry's own listener takes over (or none): the pool no longer watches it.
		pooled?.session.onStatusChange(() => {});
		// Spawning blocks the event loop for a few ms: refill after this session's answer is out.
		setTimeout(() => this.fill(), 25).unref();
		return pooled?.session;
	}

	fill(): void {
		while (!this.#closed && this.size < this.#size && this.#room()) {
			const starting: Promise<unknown> = this.#create()
				.then(async (pooled) => {
					if (this.#closed) return this.#discard(pooled);
					this.#ready.push(pooled);
					pooled.session.onStatusChange((session) => {
						if (!session.isAlive || !session.hasProcess) this.#drop(pooled);
					});
				})
				// A failing pi is not retried here: the next take() tries again.
				.catch((error) => this.#logger.warn({ err: error }, "warm pool: pi failed to start"))
				.finally(() => this.#starting.delete(starting));
			this.#starting.add(starting);
		}
	}

	/** Stops one ready process (a session needs its slot); false when none is ready. */
	async shed(): Promise<boolean> {
		const pooled = this.#ready.pop();
		if (!pooled) return false;
		pooled.session.onStatusChange(() => {});
		await this.#discard(pooled);
		return true;
	}

	/** Stops the pooled processes, waiting for those still starting. */
	async close(): Promise<void> {
		this.#closed = true;
		await Promise.all([...this.#starting]);
		await Promise.all(this.#ready.splice(0).map((pooled) => this.#discard(pooled)));
	}

	killAll(): void {
		for (const { session } of this.#ready) session.kill("SIGKILL", true);
	}

	async #discard(pooled: Pooled): Promise<void> {
		await pooled.session.stop("shutdown");
		removeEmpty(pooled.folders);
	}

	#drop(pooled: Pooled): void {
		const at = this.#ready.indexOf(pooled);
		if (at === -1) return;
		this.#ready.splice(at, 1);
		removeEmpty(pooled.folders);
		this.fill();
	}
}

/** The folder a pooled session of `area` must work in to be handed out there: the one a cold start gives. */
export function fitsArea(area: Area, session: Session, ownFolders: boolean): boolean {
	return session.cwd === (ownFolders ? join(area.path, session.id) : area.path);
}

/**
 * The warm pools, one per area of the workspace root: the operator's (an admin's creates, README's
 * layout) holds `size` processes from the start; another principal's area holds one, made after
 * that principal's first plain create, for the `size` principals who created last. A pooled pi is
 * started exactly as a cold one of its area (its folder, sandbox, agent dir, env, extensions), and
 * one is only ever handed out in the area it was started for (checked again on the way out).
 */
export class WarmPools {
	readonly #size: number;
	readonly #start: (area: Area) => Promise<Pooled>;
	readonly #logger: Logger;
	readonly #room: () => boolean;
	readonly #ownFolders: boolean;
	/** By area path; a Map's order is the order of last use (the first is the least recent). */
	readonly #pools = new Map<string, AreaPool>();
	readonly #admin: Area;
	/** Pools of areas that fell out of use, still stopping: shutdown waits for them too. */
	readonly #closing = new Set<Promise<void>>();

	constructor(
		size: number,
		admin: Area,
		options: { start: (area: Area) => Promise<Pooled>; logger: Logger; room: () => boolean; ownFolders: boolean },
	) {
		this.#size = size;
		this.#admin = admin;
		this.#start = options.start;
		this.#logger = options.logger;
		this.#room = options.room;
		this.#ownFolders = options.ownFolders;
	}

	/** Processes held: ready ones and those still starting. */
	get size(): number {
		let size = 0;
		for (const pool of this.#pools.values()) size += pool.size;
		return size;
	}

	get readyCount(): number {
		let ready = 0;
		for (const pool of this.#pools.values()) ready += pool.ready.length;
		return ready;
	}

	get readyPids(): number[] {
		return [...this.#pools.values()]
			.flatMap((pool) => pool.ready.map(({ session }) => session.pid))
			.filter((pid): pid is number => pid !== undefined);
	}

	/** Starts the operator's pool. */
	fill(): void {
		this.#pool(this.#admin).fill();
	}

	/** A ready session for a plain create in `area`, or undefined (the caller starts one cold). */
	take(area: Area): Session | undefined {
		const pool = this.#pools.get(area.path);
		if (!pool) return undefined;
		const session = pool.take();
		if (session && !fitsArea(area, session, this.#ownFolders)) {
			// Never: each pool starts its processes in its own area. Refuse rather than trust it.
			this.#logger.error({ sessionId: session.id, area: area.path }, "warm pool: a process of another area");
			void session.stop("shutdown");
			return undefined;
		}
		return session;
	}

	/** After a plain create in another principal's area: keep one process ready for its next. */
	warm(area: Area): void {
		if (area.admin || this.#pools.has(area.path)) {
			this.#touch(area.path);
			return;
		}
		const principals = [...this.#pools.keys()].filter((path) => path !== this.#admin.path);
		if (principals.length >= this.#size) {
			const oldest = principals[0] as string;
			const pool = this.#pools.get(oldest);
			this.#pools.delete(oldest);
			if (pool) {
				const closing = pool.close().finally(() => this.#closing.delete(closing));
				this.#closing.add(closing);
			}
		}
		// After this create's answer is out: spawning holds the event loop for a few ms.
		const pool = this.#pool(area);
		setTimeout(() => pool.fill(), 25).unref();
	}

	/** Stops one ready process, the least recently used area's first; false when none is ready. */
	async shed(): Promise<boolean> {
		for (const pool of this.#pools.values()) if (await pool.shed()) return true;
		return false;
	}

	async close(): Promise<void> {
		const pools = [...this.#pools.values()];
		this.#pools.clear();
		await Promise.all([...pools.map((pool) => pool.close()), ...this.#closing]);
	}

	/** Last resort on process exit. */
	killAll(): void {
		for (const pool of this.#pools.values()) pool.killAll();
	}

	#pool(area: Area): AreaPool {
		let pool = this.#pools.get(area.path);
		if (!pool) {
			const size = area.admin ? this.#size : 1;
			pool = new AreaPool(size, () => this.#start(area), this.#logger, this.#room);
			this.#pools.set(area.path, pool);
		}
		return pool;
	}

	#touch(path: string): void {
		const pool = this.#pools.get(path);
		if (!pool) return;
		this.#pools.delete(path);
		this.#pools.set(path, pool);
	}
}
