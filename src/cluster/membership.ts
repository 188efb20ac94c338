import { z } from "@hono/zod-openapi";
import type { Logger } from "pino";

export interface NodeIdentity {
	/** Unique per database: the node's name. */
	id: string;
	/** Where the other nodes reach it. */
	url: string;
	leaseTtlMs: number;
}

/** A node as every node lists it (`/v1/info`'s `cluster.nodes`): the type and the spec from one schema. */
export const NodeRow = z.object({
	id: z.string().describe("The node's id (--node-id)"),
	url: z.string().describe("Where the other nodes reach it (--node-url)"),
	startedAt: z.string().openapi({ format: "date-time", description: "When it joined" }),
	heartbeatAt: z.string().openapi({ format: "date-time", description: "When it last renewed its lease" }),
	alive: z.boolean().openapi({ description: "Its lease holds; a dead node is listed for a minute" }),
	sessions: z.number().int().openapi({ description: "Sessions it owns" }),
});
export type NodeRow = z.infer<typeof NodeRow>;

/**
 * The `nodes` table as membership needs it (src/store/postgres/membership.ts). Every lease is
 * judged by the database's clock (`now()` there), never this node's.
 */
export interface MembershipStore {
	/**
	 * Takes the node's row when no live node holds its id, and gives up the sessions that id still
	 * names, together; false while a live node holds the id.
	 */
	join(node: NodeIdentity): Promise<boolean>;
	/** Extends the lease while it still holds; false when it had run out already. */
	renew(node: NodeIdentity): Promise<boolean>;
	/** The nodes live or dead for less than a minute, with the sessions each owns. */
	nodes(): Promise<NodeRow[]>;
}

export interface MembershipEvents {
	/** The lease holds until `deadline` (process.hrtime.bigint() clock), below what the database holds. */
	renewed(deadline: bigint): void;
	/** The lease ran out before it was renewed: every session of this node must go, now. */
	lost(): void;
}

/** Share of the TTL the node trusts its lease for: the rest is the margin for stopping pi in time. */
const trustedShare = 0.7;
const ms = 1_000_000n;

/**
 * This node's row in `nodes` and its lease. The lease is renewed every third of the TTL; a renewal
 * counts only while the lease still holds (`lease_until > now()` in the database's clock), so a
 * node that was paused past its TTL learns it lost everything instead of quietly taking it back.
 * Locally the lease is trusted for 70 % of the TTL from the moment the renewal was sent: the
 * database's lease (from its own now(), which is later) always outlives the local one.
 */
export class Membership {
	readonly #store: MembershipStore;
	readonly #node: NodeIdentity;
	readonly #logger: Logger;
	readonly #events: MembershipEvents;
	#validUntil = 0n;
	#timer: NodeJS.Timeout | undefined;
	#renewing: Promise<boolean> | undefined;
	#nodes: NodeRow[] = [];
	#error: string | undefined;
	#stopped = false;

	constructor(store: MembershipStore, node: NodeIdentity, logger: Logger, events: MembershipEvents) {
		this.#store = store;
		this.#node = node;
		this.#logger = logger;
		this.#events = events;
	}

	/**
	 * Joins (or joins again after a lost lease): sessions this node's id still names are given up
	 * first. A live node with the same id (a second process under one --node-name, or this node's
	 * previous run whose lease has not run out yet) is waited for, up to the TTL, then refused:
	 * two processes under one id would be two writers.
	 */
	async join(): Promise<void> {
		const until = Date.now() + this.#node.leaseTtlMs + 1000;
		while (!(await this.#tryJoin())) {
			if (Date.now() > until)
				throw new Error(`another live gateway node is named ${this.#node.id}; give each node its own --node-name`);
			await new Promise((r) => setTimeout(r, 250));
		}
		await this.#readNodes();
	}

	async #tryJoin(): Promise<boolean> {
		const sent = process.hrtime.bigint();
		const joined = await this.#store.join(this.#node);
		if (joined) this.#trust(sent);
		return joined;
	}

	start(): void {
		this.#timer = setInterval(
			() => {
				// Also when a renewal hangs (a database that stopped answering): the deadline is local.
				if (this.#validUntil > 0n && !this.valid) this.#lose("the lease ran out before it was renewed");
				void this.renew();
			},
			Math.max(100, this.#node.leaseTtlMs / 3),
		);
		this.#timer.unref();
	}

	/** The lease holds now, by this node's clock (it renews ahead of time). */
	get valid(): boolean {
		return process.hrtime.bigint() < this.#validUntil;
	}

	/** The database answered the last renewal (else why not). */
	get error(): string | undefined {
		return this.#error;
	}

	/** The nodes as of the last renewal: live ones and those dead for less than a minute. */
	get nodes(): readonly NodeRow[] {
		return this.#nodes;
	}

	/** Renews now (concurrent callers share one renewal); true when the lease holds. */
	renew(): Promise<boolean> {
		this.#renewing ??= this.#renew().finally(() => {
			this.#renewing = undefined;
		});
		return this.#renewing;
	}

	async #renew(): Promise<boolean> {
		if (this.#stopped) return false;
		// Past the local deadline the fence has stopped this node's pi processes: whatever the
		// database says, their sessions are gone from here.
		if (this.#validUntil > 0n && !this.valid) this.#lose("the lease ran out before it was renewed");
		if (this.#validUntil === 0n) return await this.#rejoin();
		const sent = process.hrtime.bigint();
		let held: boolean;
		try {
			held = await this.#store.renew(this.#node);
			this.#answered();
		} catch (error) {
			this.#failed(error as Error);
			return this.valid;
		}
		if (!held) {
			this.#lose("the database says the lease ran out");
			return await this.#rejoin();
		}
		this.#trust(sent);
		await this.#readNodes().catch(() => {});
		return true;
	}

	async #rejoin(): Promise<boolean> {
		try {
			await this.join();
			this.#answered();
			this.#logger.warn("cluster: joined again, with no sessions");
			return true;
		} catch (error) {
			this.#failed(error as Error);
			return false;
		}
	}

	#answered(): void {
		if (this.#error !== undefined) this.#logger.info("cluster: the database answers again");
		this.#error = undefined;
	}

	#failed(error: Error): void {
		if (this.#error === undefined) this.#logger.error({ err: error }, "cluster: cannot reach the database");
		this.#error = error.message;
	}

	#lose(why: string): void {
		if (this.#validUntil === 0n) return;
		this.#validUntil = 0n;
		this.#logger.error({ why }, "cluster: lease lost; every session of this node is dropped");
		this.#events.lost();
	}

	#trust(sent: bigint): void {
		this.#validUntil = sent + BigInt(Math.floor(this.#node.leaseTtlMs * trustedShare)) * ms;
		this.#events.renewed(this.#validUntil);
	}

	async #readNodes(): Promise<void> {
		this.#nodes = await this.queryNodes();
	}

	/** The nodes and the sessions each owns, as the database says now (metrics read it at scrape time). */
	async queryNodes(): Promise<NodeRow[]> {
		return await this.#store.nodes();
	}

	stop(): void {
		this.#stopped = true;
		clearInterval(this.#timer);
	}
}
