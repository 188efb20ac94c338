// Over 300 lines on purpose: the pool's sizing, its per-area pools, growth under bursts and the
// check that a pooled pi is still what a cold start would be are one policy, read top to bottom.
import { type Dir, lstatSync, opendirSync, readlinkSync, rmdirSync, type Stats } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Area } from "../process/areas.ts";
import type { SandboxRelay } from "../relay/index.ts";
import type { Session } from "../session/session.ts";

/** A pooled pi process, and how to remove what its start made (its empty folder) once it is not used. */
export interface Pooled {
	session: Session;
	/** Folders made for it, removed when empty after it stopped unused. */
	folders: string[];
	/** pi's agent folder (settings, models, the extensions it loads at start) and its stamp once pi was up (undefined: too big to stamp, never handed out). */
	agentDir?: { path: string; stamp: string | undefined };
	/**
	 * Reads the operator's models.json and auth.json again before the pi is handed out (relay/
	 * sandbox-relay.ts SandboxRelay.refresh): its relay gets the keys as they are now, and where what
	 * pi read of them changed, its folder's stamp does too and it is not handed out.
	 */
	refresh?: () => void;
	/** Its relay (a sandboxed pi's), handed on with the pi when it wakes a session (pooled-wake.ts). */
	relay?: SandboxRelay;
	/** pi's own session folder (--session-dir), which its sandbox shows writable. */
	sessionDir?: string;
}

/** Entries a stamp reads at most (the folder's own included); past it the folder has no stamp. */
const stampEntries = 2000;
/** Folder levels a stamp goes down (pi loads an extension's own imports from anywhere below). */
const stampDepth = 8;

/**
 * What pi read from its agent folder at start, as names, and sizes and times of files (its session
 * files excepted): a pooled pi whose folder changed since (an extension dropped in or edited, a
 * setting written) would not be what a cold start is now, so it is not handed out. Undefined when
 * the folder is too big to stamp cheaply: no pooled pi of that folder is then handed out at all.
 *
 * The folder is the agent's to write, and this runs in the gateway, outside the sandbox:
 * - links are stamped as links (lstat, readlink), never followed: following one let an agent
 *   watch, by the time its creates took, when folders it cannot see changed;
 * - the work is bounded: entries are read one at a time and the walk stops at `stampEntries`
 *   (a folder of 400,000 files cost a second of the event loop per create, for every tenant);
 * - a file's ctime is in it beside size and mtime (`touch -r` puts an mtime back, not a ctime);
 * - a folder's own times are not (every pi start makes and removes a file in the agent folder, and
 *   with the folder's mtime in the stamp each pooled pi's start made every one before it stale):
 *   its entries' names are, at every level down to `stampDepth`.
 */
export function agentDirStamp(dir: string): string | undefined {
	const parts: string[] = [];
	let budget = stampEntries;
	const walk = (path: string, depth: number): boolean => {
		if (--budget < 0) return false;
		let stat: Stats;
		try {
			stat = lstatSync(path);
		} catch {
			parts.push(`${path}:-`);
			return true;
		}
		if (stat.isSymbolicLink()) {
			let target = "?";
			try {
				target = readlinkSync(path);
			} catch {}
			parts.push(`${path}->${target}:${stat.ctimeMs}`);
			return true;
		}
		if (!stat.isDirectory()) {
			parts.push(`${path}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`);
			return true;
		}
		parts.push(`${path}/`);
		if (depth >= stampDepth) return false;
		const names: string[] = [];
		let folder: Dir | undefined;
		try {
			folder = opendirSync(path);
			for (let entry = folder.readSync(); entry; entry = folder.readSync()) {
				if (depth === 0 && entry.name === "sessions") continue;
				if (names.length >= budget) return false;
				names.push(entry.name);
			}
		} catch {
			parts.push(`${path}:unreadable`);
			return true;
		} finally {
			folder?.closeSync();
		}
		for (const name of names.sort()) if (!walk(join(path, name), depth + 1)) return false;
		return true;
	};
	return walk(dir, 0) ? parts.join("\n") : undefined;
}

/** Stops a pooled process and removes its folders when empty: nothing of anyone's is in it, so no grace period. */
async function discardPooled(pooled: Pooled): Promise<void> {
	pooled.session.kill("SIGKILL", true);
	await pooled.session.stop("shutdown");
	removeEmpty(pooled.folders);
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
/** A pool grown by a burst goes back to its size after this long without a create that found it empty. */
const shrinkAfterMs = 10 * 60_000;

class AreaPool {
	readonly #size: number;
	/** What it fills to: its size, doubled (up to `#max`) by each create that found it empty. */
	#target: number;
	readonly #max: number;
	#lastMiss = 0;
	readonly #create: (spawned: (session: Session) => void) => Promise<Pooled>;
	/** Processes still starting: a closing pool kills them rather than wait for pi to come up. */
	readonly #launching = new Set<Session>();
	readonly #logger: Logger;
	readonly #room: () => boolean;
	readonly #ready: Pooled[] = [];
	readonly #starting = new Set<Promise<unknown>>();
	#closed = false;

	constructor(
		size: number,
		max: number,
		create: (spawned: (session: Session) => void) => Promise<Pooled>,
		logger: Logger,
		room: () => boolean,
	) {
		this.#size = size;
		this.#target = size;
		this.#max = Math.max(size, max);
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

	get target(): number {
		return this.#target;
	}

	/**
	 * A ready session; else, when one is starting, that one once it is up (sooner than a cold start,
	 * and one pi start instead of two); else undefined (the caller starts one cold).
	 */
	async take(): Promise<Pooled | undefined> {
		const ready = this.#takeReady(true);
		const starting = [...this.#starting][0];
		if (ready || !starting) return ready;
		await starting;
		return this.#takeReady(false);
	}

	#takeReady(count: boolean): Pooled | undefined {
		let pooled = this.#ready.shift();
		while (pooled && !this.#usable(pooled)) pooled = this.#ready.shift();
		// Creates come faster than it refills: hold more. After a quiet while, back to its size. (A
		// create that waited for a starting one was counted when it found none ready.)
		if (count && !pooled) {
			this.#target = Math.min(this.#max, this.#target * 2);
			this.#lastMiss = Date.now();
		} else if (count && Date.now() - this.#lastMiss > shrinkAfterMs) this.#target = this.#size;
		// The registry's own listener takes over (or none): the pool no longer watches it.
		pooled?.session.onStatusChange(() => {});
		// Spawning blocks the event loop for a few ms: refill after this session's answer is out.
		setTimeout(() => this.fill(), 25).unref();
		return pooled;
	}

	fill(): void {
		// One start at a time: a pi's start is ≈ 0.3 s of a core, and the sessions being made and run
		// beside it need the cores more than the pool does (on 2 cores, two at once slowed them).
		while (!this.#closed && this.#starting.size === 0 && this.size < this.#target && this.#room()) {
			let started = false;
			let launched: Session | undefined;
			const starting: Promise<unknown> = this.#create((session) => {
				// A start made once more (warm-start.ts) replaces the first.
				if (launched) this.#launching.delete(launched);
				launched = session;
				this.#launching.add(session);
			})
				.then(async (pooled) => {
					if (this.#closed) return discardPooled(pooled);
					started = true;
					this.#ready.push(pooled);
					pooled.session.onStatusChange((session) => {
						if (!session.isAlive || !session.hasProcess) this.#drop(pooled);
					});
				})
				.catch((error) => {
					if (!this.#closed) this.#logger.warn({ err: error }, "warm pool: pi failed to start");
				})
				.finally(() => {
					if (launched) this.#launching.delete(launched);
					this.#starting.delete(starting);
					// The next one, if this one came up; a failing pi is not retried here: the next take() tries again.
					if (started) this.fill();
				});
			this.#starting.add(starting);
		}
	}

	/** Stops one ready process (a session needs its slot); false when none is ready. */
	async shed(): Promise<boolean> {
		const pooled = this.#ready.pop();
		if (!pooled) return false;
		pooled.session.onStatusChange(() => {});
		await discardPooled(pooled);
		return true;
	}

	/** Stops the pooled processes: nobody's work is in them, so they are killed, those still starting too. */
	async close(): Promise<void> {
		this.#closed = true;
		for (const session of this.#launching) session.kill("SIGKILL", true);
		await Promise.all([...this.#starting]);
		await Promise.all(this.#ready.splice(0).map((pooled) => discardPooled(pooled)));
	}

	killAll(): void {
		for (const { session } of this.#ready) session.kill("SIGKILL", true);
	}

	/** Alive, and its agent folder as pi read it; one whose folder changed is stopped. */
	#usable(pooled: Pooled): boolean {
		if (!(pooled.session.isAlive && pooled.session.hasProcess)) return false;
		pooled.refresh?.();
		const stamp = pooled.agentDir ? agentDirStamp(pooled.agentDir.path) : undefined;
		if (!pooled.agentDir || (stamp !== undefined && stamp === pooled.agentDir.stamp)) return true;
		pooled.session.onStatusChange(() => {});
		void discardPooled(pooled);
		return false;
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
	readonly #max: number;
	readonly #start: (area: Area, spawned: (session: Session) => void) => Promise<Pooled>;
	readonly #logger: Logger;
	readonly #room: () => boolean;
	readonly #ownFolders: boolean;
	/** By area path; a Map's order is the order of last use (the first is the least recent). */
	readonly #pools = new Map<string, AreaPool>();
	readonly #admin: Area;
	/** Pools of areas that fell out of use, still stopping: shutdown waits for them too. */
	readonly #closing = new Set<Promise<void>>();
	/**
	 * Once closed, no pool is made or filled again: a create answered during shutdown asks to warm
	 * its principal's area, and a pool made after close() is one nothing stops (its pi would outlive
	 * the gateway's shutdown).
	 */
	#closed = false;

	constructor(
		size: number,
		admin: Area,
		options: {
			/** Starts a pi for `area`, saying which session it is as soon as it exists. */
			start: (area: Area, spawned: (session: Session) => void) => Promise<Pooled>;
			logger: Logger;
			room: () => boolean;
			ownFolders: boolean;
			/** How far the operator's pool may grow under a burst (config.warmPoolMax). */
			max?: number;
		},
	) {
		this.#size = size;
		this.#max = options.max ?? size;
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

	/** The pids ready in one area's pool (by the area's path), for tests and benchmarks. */
	readyPidsIn(areaPath: string): number[] {
		return (this.#pools.get(areaPath)?.ready ?? []).flatMap(({ session }) => session.pid ?? []);
	}

	/** What the operator's pool fills to now (grown by a burst of creates). */
	get target(): number {
		return this.#pools.get(this.#admin.path)?.target ?? this.#size;
	}

	/** Starts the operator's pool. */
	fill(): void {
		if (this.#closed) return;
		this.#pool(this.#admin).fill();
	}

	/**
	 * A ready session for a plain create in `area`, made to fit it by `fitting` (a model set on it:
	 * pooled-model.ts), or undefined (the caller starts one cold; one that did not fit is stopped).
	 */
	async take(area: Area, fitting?: (pooled: Pooled) => Promise<boolean>): Promise<Session | undefined> {
		return (await this.takePooled(area, fitting))?.session;
	}

	/** As `take`, with what the pool knows of the process (its relay and folders: pooled-wake.ts). */
	async takePooled(area: Area, fitting?: (pooled: Pooled) => Promise<boolean>): Promise<Pooled | undefined> {
		const pool = this.#pools.get(area.path);
		if (!pool) return undefined;
		const pooled = await pool.take();
		if (!pooled) return undefined;
		const { session } = pooled;
		if (!fitsArea(area, session, this.#ownFolders)) {
			// Never: each pool starts its processes in its own area. Refuse rather than trust it.
			this.#logger.error({ sessionId: session.id, area: area.path }, "warm pool: a process of another area");
			void session.stop("shutdown");
			return undefined;
		}
		const fits = fitting ? await fitting(pooled).catch(() => false) : true;
		if (fits) return pooled;
		await discardPooled(pooled);
		return undefined;
	}

	/** Stops a pooled process taken out and not used (its folders go too, when empty). */
	discard(pooled: Pooled): Promise<void> {
		return discardPooled(pooled);
	}

	/** After a plain create in another principal's area: keep one process ready for its next. */
	warm(area: Area): void {
		if (this.#closed) return;
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
		this.#closed = true;
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
			const [size, max] = area.admin ? [this.#size, this.#max] : [1, 1];
			pool = new AreaPool(size, max, (spawned) => this.#start(area, spawned), this.#logger, this.#room);
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
