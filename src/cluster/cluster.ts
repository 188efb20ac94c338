// Over 300 lines on purpose: locating, claiming, adopting, holding and releasing a session are one
// protocol over the same holds and the same store, and read best together; membership, the fence,
// forwarding, peers and notifications are beside it in this folder.
import { createHmac, timingSafeEqual } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import type { Config } from "../config/config.ts";
import type { PolicyEngine } from "../sessions/dialogs/index.ts";
import type { SessionRegistry } from "../sessions/registry/index.ts";
import {
	parseStoredRecord,
	type SessionAccess,
	type SessionAccessRecord,
	SessionGrant,
} from "../sessions/registry/index.ts";
import { GatewayError } from "../shared/errors.ts";
import type { Claim, ClusterStore, PagedRow, RowQuery } from "./cluster-store.ts";
import { Fence } from "./fence.ts";
import { reportFolder } from "./folder-adoption.ts";
import { rehomeSessionFile } from "./folder-home.ts";
import { FolderSync } from "./folder-sync.ts";
import { Membership, type NodeRow } from "./membership.ts";
import type { ClusterNotice, NoticeChannel } from "./notifications.ts";
import { fanOut, waitForMove } from "./peers.ts";

/**
 * Where a request for a session is served: here, or on the node that owns it; `hidden` when no
 * live node owns it and the caller may not have it claimed (answered as a session that does not exist).
 */
export type Route = { kind: "local" } | { kind: "forward"; node: string; url: string } | { kind: "hidden" };

/** Whether a caller may use a session with this access record (ownership.ts mayAccessRecord). */
export type ClaimRight = (access: SessionAccessRecord) => boolean;

/** The header a node puts on a request it forwards: the sender's id and a MAC over it. */
export const forwardedHeader = "x-pi-gateway-forwarded";

/** How often stopped sessions are given back to the cluster. */
const releaseEveryMs = 1000;
/** Events that change what an inbox long-poll waits for: approvals and client tool calls. */
const inboxEvents = new Set(["approval_requested", "approval_resolved", "tool_call_requested", "tool_call_resolved"]);

/**
 * Cluster mode (`--database-url`): this node's membership, its fence, and the rules that say
 * where a session lives. A session is served by the node that owns it (cluster-store.ts): a
 * request for it on any other node is forwarded there (src/http/cluster/cluster-routing.ts), a session no
 * live node owns is claimed by the node the request reached, and a stopped session is given back
 * so that whichever node is asked next can take it. See README "Running several nodes".
 */
export class Cluster {
	readonly node: string;
	readonly url: string;
	readonly #config: Config;
	readonly #store: ClusterStore;
	readonly #registry: SessionRegistry;
	readonly #access: SessionAccess;
	readonly #policies: PolicyEngine | undefined;
	/** Sessions' folders follow them to other nodes, through PostgreSQL (folder-sync.ts). */
	readonly folders: FolderSync;
	readonly #logger: Logger;
	readonly #membership: Membership;
	readonly #fence: Fence;
	readonly #notices: NoticeChannel;
	readonly #noticed = new EventEmitter<{ notice: [ClusterNotice] }>();
	readonly #claims = new Map<string, Promise<Route>>();
	/** Sessions a request is on its way to (located, not yet answered): never given back meanwhile. */
	readonly #holds = new Map<string, number>();
	readonly #forwardKey: Buffer;
	readonly #mac: string;
	#timer: NodeJS.Timeout | undefined;
	#unsubscribe: (() => void) | undefined;

	private constructor(options: ClusterOptions) {
		const { config, store, notices, registry, access, policies, logger, url, forwardKey } = options;
		this.#policies = policies;
		this.node = store.node;
		this.url = url;
		this.#config = config;
		this.#store = store;
		this.#registry = registry;
		this.#access = access;
		this.#logger = logger.child({ node: this.node });
		this.#forwardKey = forwardKey;
		this.#mac = mac(forwardKey, this.node);
		this.#fence = new Fence(this.#logger);
		this.#membership = new Membership(
			store.membership,
			{ id: this.node, url, leaseTtlMs: config.leaseTtlMs },
			this.#logger,
			{
				renewed: (deadline) => this.#fence.arm(deadline),
				lost: () => this.#dropAll(),
			},
		);
		this.#notices = notices;
		this.folders = new FolderSync(config, store.folders, registry, this.#logger);
	}

	/** Joins the cluster: the node's row and lease, its fence, its notices, the registry's hooks. */
	static async start(options: ClusterOptions): Promise<Cluster> {
		const cluster = new Cluster(options);
		try {
			await cluster.#membership.join();
			await cluster.#notices.listen((notice) => cluster.#noticed.emit("notice", notice));
		} catch (error) {
			cluster.#fence.close();
			await cluster.#notices.close();
			throw error;
		}
		cluster.#membership.start();
		// A folder being stored keeps its session here; the last stores finish before the node leaves.
		cluster.folders.start((id) => cluster.hold(id));
		options.store.beforeClose(() => cluster.folders.close());
		cluster.#registry.setCluster({
			assertCanCreate: async () => {
				const why = await cluster.check();
				if (why) throw noNewSessions(why);
			},
			beforeStart: (session) => cluster.#confirmOwner(session.id),
			started: (session) => session.pid !== undefined && cluster.#fence.guard(session.id, session.pid),
			exited: (id) => cluster.#fence.unguard(id),
			closing: () => cluster.close(),
		});
		cluster.#unsubscribe = cluster.#registry.subscribeAll((_id, event) => {
			// Client tool calls wake the same inbox waiters (GET /v1/tool-calls?wait= long-polls on them too).
			if (inboxEvents.has(event.type)) cluster.#notices.send({ type: "approvals", node: cluster.node });
		});
		cluster.#timer = setInterval(() => cluster.#releaseStopped(), releaseEveryMs);
		cluster.#timer.unref();
		cluster.#logger.info({ url: cluster.url, leaseTtlMs: options.config.leaseTtlMs }, "cluster: node joined");
		return cluster;
	}

	/** The nodes as of the last renewal (live, and dead for less than a minute). */
	get nodes(): readonly NodeRow[] {
		return this.#membership.nodes;
	}

	/** The nodes and their session counts asked of the database now; the last renewal's when it does not answer. */
	async liveNodes(): Promise<readonly NodeRow[]> {
		return this.#membership.queryNodes().catch(() => this.nodes);
	}

	/** Why this node cannot take new work now, as of its last renewal: the database is out of reach, or the lease. */
	get unavailable(): string | undefined {
		if (this.#membership.error !== undefined) return `the database is out of reach (${this.#membership.error})`;
		if (!this.#membership.valid) return "this node's lease is not renewed";
		return undefined;
	}

	/** The same, asked of the database now (readiness, new sessions): one `SELECT 1`, at most 2 s. */
	async check(): Promise<string | undefined> {
		const stale = this.unavailable;
		let timer: NodeJS.Timeout | undefined;
		const timeout = new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new Error("no answer in 2 s")), 2000);
		});
		try {
			await Promise.race([this.#store.ping(), timeout]);
		} catch (error) {
			return `the database is out of reach (${(error as Error).message})`;
		} finally {
			clearTimeout(timer);
		}
		// It answers now: a lease that lapsed meanwhile is renewed (or lost) before new work.
		if (stale !== undefined && !(await this.#membership.renew())) return "this node's lease is not renewed";
		return undefined;
	}

	/** Node `id` was not dead at this node's last renewal (a third of the TTL ago at most; a newer node is alive). */
	isAlive(id: string): boolean {
		return !this.#membership.nodes.some((n) => n.id === id && !n.alive);
	}

	/** The headers a forwarded request carries, so the owner does not forward it again. */
	get forwardHeaders(): Record<string, string> {
		return { [forwardedHeader]: `${this.node} ${this.#mac}` };
	}

	/** The request came from another node of this cluster (its MAC checks out). */
	isForwarded(headers: Headers): boolean {
		const value = headers.get(forwardedHeader);
		if (!value) return false;
		const [node, given] = value.split(" ");
		if (!node || !given) return false;
		const want = Buffer.from(mac(this.#forwardKey, node));
		const got = Buffer.from(given);
		return want.length === got.length && timingSafeEqual(want, got);
	}

	/**
	 * Where session `id` is served. Held here: local. Owned by a live node: forward. Owned by no
	 * live node: claimed now (its conversation comes from the database) and local. Unknown: local
	 * too, so the route answers 404 (or 410 for a buried one). With `allowed` (a caller that is no
	 * admin) a session no live node owns is claimed only when its access record lets the caller
	 * use it; otherwise the route is `hidden` and nothing is claimed. The caller calls unhold(id)
	 * once its request is over, unless locate() threw.
	 */
	locate(id: string, allowed?: ClaimRight): Promise<Route> {
		// Held from the start: a session claimed here must not be given back before its request runs.
		this.#holds.set(id, (this.#holds.get(id) ?? 0) + 1);
		return this.#route(id, allowed).catch((error: unknown) => {
			this.unhold(id);
			throw error;
		});
	}

	async #route(id: string, allowed: ClaimRight | undefined): Promise<Route> {
		if (allowed && !this.#registry.has(id) && !this.#claims.has(id)) {
			// Asked before the claim, outside the claims the callers of one id share: one read.
			const seen = await this.#store.claimView(id);
			if (seen?.owner && seen.owner.node !== this.node) return { kind: "forward", ...seen.owner };
			if (seen && !allowed(accessRecord(id, seen.access))) return { kind: "hidden" };
		}
		let claim = this.#claims.get(id);
		if (!claim) {
			claim = this.#locate(id).finally(() => this.#claims.delete(id));
			this.#claims.set(id, claim);
		}
		return await claim;
	}

	async #locate(id: string): Promise<Route> {
		if (!this.#membership.valid) await this.#membership.renew();
		if (this.#registry.has(id)) return { kind: "local" };
		this.#assertDatabase();
		// Most requests for a session another node runs: one plain read, then forward.
		const owner = await this.#store.ownerOf(id);
		if (owner && owner.node !== this.node) return { kind: "forward", ...owner };
		const claim: Claim = await this.#store.claim(id);
		if (claim.kind === "owned") return { kind: "forward", node: claim.node, url: claim.url };
		if (claim.kind === "absent") {
			if (claim.gone) {
				const why = claim.gone.reason === "restart" ? "did not outlive its node" : "was stopped after idling";
				throw new GatewayError(
					410,
					"session_gone",
					`Session ${id} was ephemeral (persist:false) and ${why} (${claim.gone.at})`,
				);
			}
			return { kind: "local" };
		}
		await this.#adopt(claim);
		return { kind: "local" };
	}

	async #adopt(claim: Extract<Claim, { kind: "claimed" }>): Promise<void> {
		const parsed = parseStoredRecord(claim.row);
		if ("skip" in parsed) {
			this.#logger.error({ sessionId: parsed.id, reason: parsed.skip }, "cluster: unreadable session skipped");
			return;
		}
		const { record } = parsed;
		if (!record.persist) {
			// An ephemeral session cannot outlive the node that ran it.
			this.#store.bury(record.id, "restart");
			return;
		}
		if (claim.access) this.#access.preload(record.id, claim.access.owner, claim.access.grants);
		if (claim.rules) this.#policies?.preload(record.id, JSON.parse(claim.rules));
		// Its folder under this node's root, restored from the database before pi can start (folder-sync.ts).
		const placed = await this.folders.place(record);
		const session = this.#registry.adoptStored(placed.record, { clean: claim.clean });
		reportFolder(session, placed.report);
		const file = session.piState.sessionFile;
		// The database's copy is the conversation: a file left here by an earlier visit may be behind it.
		// No copy: no run of it ever settled (or its node died first), so there is nothing to lose and
		// pi starts the conversation afresh on its file rather than refusing it as missing.
		if (file) session.piState.fileSeen = await this.#store.restoreConversation(record.id, file);
		// pi resumes in the folder its file's header names: the one the session works in on this node.
		if (file) await rehomeSessionFile(file, session.cwd);
	}

	/** Keeps `id` on this node (never given back) until the returned function is called: its folder is being stored. */
	hold(id: string): () => void {
		this.#holds.set(id, (this.#holds.get(id) ?? 0) + 1);
		return () => this.unhold(id);
	}

	/** The request that located `id` is over (answered, forwarded or failed): one call per locate(). */
	unhold(id: string): void {
		const n = (this.#holds.get(id) ?? 1) - 1;
		if (n > 0) this.#holds.set(id, n);
		else this.#holds.delete(id);
	}

	/** The live node other than this one that owns `id`: looked up only, never claimed. */
	async ownerElsewhere(id: string): Promise<{ node: string; url: string } | undefined> {
		if (this.#registry.has(id)) return undefined;
		const owner = await this.#store.ownerOf(id).catch(() => undefined);
		return owner && owner.node !== this.node ? owner : undefined;
	}

	/** After a forward found its node gone: waits until the session has another owner or none (≤ TTL). */
	waitForMove(id: string, from: string, signal: AbortSignal): Promise<boolean> {
		return waitForMove((session) => this.#store.ownerState(session), id, from, this.#config.leaseTtlMs + 2000, signal);
	}

	/** A batch of stored session rows in the list's order, filtered in the database. */
	storedRows(query: RowQuery): Promise<PagedRow[]> {
		return this.#store.storedRows(query);
	}

	/**
	 * GETs `path` on every other live node (forwarded: each answers with its own sessions only),
	 * with the caller's credentials. A node that does not answer in time is left out and named.
	 */
	fanOut<T>(path: string, authorization: string | null): Promise<{ results: T[]; missing: string[] }> {
		const others = this.nodes.filter((n) => n.alive && n.id !== this.node);
		const headers = { ...this.forwardHeaders, ...(authorization && { authorization }) };
		return fanOut<T>(others, path, headers, this.#logger);
	}

	/** Notices from every node (approvals changed somewhere), for long-polls. */
	onNotice(listener: (notice: ClusterNotice) => void): () => void {
		this.#noticed.on("notice", listener);
		return () => this.#noticed.off("notice", listener);
	}

	#assertDatabase(): void {
		const why = this.unavailable;
		if (why) throw noNewSessions(why);
	}

	/** A pi process starts only while this node owns the session: checked in the database first. */
	async #confirmOwner(id: string): Promise<void> {
		if (!this.#membership.valid && !(await this.#membership.renew())) throw unavailable("this node's lease ran out");
		const owns = await this.#store.ownsNow(id).catch((error: Error) => {
			throw unavailable(`ownership of ${id} cannot be confirmed: ${error.message}`);
		});
		if (owns) return;
		this.#registry.evict(id, "another node owns it now");
		throw new GatewayError(503, "node_lost", `Session ${id} moved to another node; retry the request`, {
			retryAfter: 1,
		});
	}

	#dropAll(): void {
		for (const session of this.#registry.list()) this.#registry.evict(session.id, "this node's lease ran out");
	}

	#releaseStopped(): void {
		for (const session of this.#registry.list()) {
			if (this.#holds.has(session.id)) continue;
			const record = this.#registry.release(session.id);
			if (record) this.#store.release(record);
		}
	}

	/**
	 * Stops the cluster's timers, notices and fence, once every session is stopped (the registry
	 * calls it at shutdown); the store then gives the sessions and the node's row up as it closes.
	 */
	async close(): Promise<void> {
		clearInterval(this.#timer);
		this.#unsubscribe?.();
		this.#membership.stop();
		await this.#notices.close();
		this.#fence.close();
	}
}

export interface ClusterOptions {
	config: Config;
	store: ClusterStore;
	/** What wakes other nodes' waiters (LISTEN/NOTIFY in the database). */
	notices: NoticeChannel;
	registry: SessionRegistry;
	access: SessionAccess;
	/** Remembered approval rules move with their session. */
	policies?: PolicyEngine;
	logger: Logger;
	/** Where the other nodes reach this one. */
	url: string;
	/** Signs forwarded requests; derived from the cluster secret, which the database never holds (credentials.ts). */
	forwardKey: Buffer;
}

/** An access record as the database holds it (grants checked as a node that takes the session over reads them). */
function accessRecord(sessionId: string, access: { owner: string; grants: unknown[] }): SessionAccessRecord {
	const grants = SessionGrant.array().safeParse(access.grants);
	return { sessionId, owner: access.owner, grants: grants.success ? grants.data : [] };
}

const mac = (key: Buffer, node: string) => createHmac("sha256", key).update(`forward:${node}`).digest("base64url");

const unavailable = (detail: string) => new GatewayError(503, "database_unavailable", detail, { retryAfter: 2 });
const noNewSessions = (why: string) =>
	unavailable(`This node cannot take new sessions now: ${why}; its running sessions go on`);
