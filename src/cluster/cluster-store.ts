import type { StoredSession, Tombstone } from "../sessions/registry/index.ts";
import type { FolderStore } from "./folder-store.ts";
import type { MembershipStore } from "./membership.ts";

/** What a claim found: nothing (perhaps a tombstone), a live owner elsewhere, or the session, now this node's. */
export type Claim =
	| { kind: "absent"; gone?: Tombstone }
	| { kind: "owned"; node: string; url: string }
	| {
			kind: "claimed";
			row: { id: string; record: string };
			clean: boolean;
			access?: { owner: string; grants: unknown[] };
			/** Approval rules remembered for the session (JSON), if any. */
			rules?: string;
	  };

/** A stored session row for the cluster-wide list: its record, who owns it and whom it is shared with. */
export interface PagedRow {
	id: string;
	record: string;
	created_at: string;
	access_owner: string | null;
	access_grants: string | null;
}

export interface RowQuery {
	/**
	 * Which rows by their owner: held by one of `in` (nodes asked that did not answer), or by none
	 * of `notIn` (the nodes asked: each lists its own), unowned rows included.
	 */
	owners: { in: string[] } | { notIn: string[] };
	/** The owner principal (a session without an access row is the admin's). */
	principal?: string;
	/** Only rows after this (createdAt, id), in the list's order. */
	after?: { createdAt: string; id: string };
	limit: number;
}

/**
 * What cluster mode needs of the shared database (src/store/postgres/cluster.ts), declared here so
 * the cluster's protocol does not depend on SQL. The lookups a request waits for throw 503
 * database_unavailable when the database is out of reach: the client retries, on any node.
 */
export interface ClusterStore {
	/** This node's id. */
	readonly node: string;
	readonly membership: MembershipStore;
	readonly folders: FolderStore;
	/** The live node that runs session `id`, read without a lock. */
	ownerOf(id: string): Promise<{ node: string; url: string } | undefined>;
	/** Takes session `id` for this node when no live node holds it (one transaction). */
	claim(id: string): Promise<Claim>;
	/** What decides whether a caller may have `id` claimed: its live owner, and its access record. */
	claimView(
		id: string,
	): Promise<{ owner?: { node: string; url: string }; access: { owner: string; grants: unknown[] } } | undefined>;
	/** Session `id`'s owner and whether that owner's lease holds; undefined when there is no such row. Never throws. */
	ownerState(id: string): Promise<{ owner: string | null; live: boolean | null } | undefined>;
	/** True while this node owns `id` and its lease holds; throws when the database does not answer. */
	ownsNow(id: string): Promise<boolean>;
	/** One round trip to the database; throws when it does not answer. */
	ping(): Promise<void>;
	/** A batch of stored session rows in the list's order, filtered in the database. */
	storedRows(query: RowQuery): Promise<PagedRow[]>;
	bury(id: string, reason: Tombstone["reason"]): void;
	/** Writes the stored copy of the conversation to `file`; false when there is none. */
	restoreConversation(id: string, file: string): Promise<boolean>;
	/** Gives a stopped session back (owner NULL) with its last state. */
	release(record: StoredSession): void;
	/** Runs `last` when the store closes, while this node is still a member. */
	beforeClose(last: () => Promise<void>): void;
}
