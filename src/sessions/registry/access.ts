import { z } from "@hono/zod-openapi";

/**
 * What a principal other than the owner may do with a session: `read` it (state, messages,
 * events, approvals), `write` to it (prompt, commands, delete; reading included), or `answer`
 * its approvals (and see them) without reading or driving the session.
 */
export const SessionRight = z.enum(["read", "write", "answer"]).openapi("SessionRight", {
	description:
		"What a principal the session is shared with may do: `read` it, `write` to it (reading included), or `answer` its approvals only",
});
export type SessionRight = z.infer<typeof SessionRight>;

/**
 * A principal's name, as keys, grants, the audit log and `resolvedBy` carry it: an API key's
 * name, `admin`, or `jwt:<sub>` for an identity provider's subject (whose ids hold `|`:
 * `jwt:auth0|123`). Letters, digits and `_ . @ : | -` only: safe in logs, JSON and SQL parameters.
 */
export const PrincipalName = z
	.string()
	.regex(/^[\w.@:|-]{1,128}$/, "1 to 128 of letters, digits and _ . @ : | -")
	.openapi({
		description: "A principal: an API key's name, `admin`, or `jwt:<sub>` for an identity provider's subject",
		example: "jwt:auth0|123",
	});

export const SessionGrant = z
	.strictObject({
		principal: PrincipalName,
		can: z.array(SessionRight).min(1).describe("What it may do"),
	})
	.openapi("SessionGrant", {
		description: "One principal the session is shared with",
		example: { principal: "carol", can: ["answer"] },
	});

export const SessionAccessRecord = z
	.object({
		sessionId: z.string().describe("The session"),
		owner: z.string().openapi({ description: "The principal that created the session" }),
		grants: z.array(SessionGrant).describe("Whom it is shared with, and what each may do"),
	})
	.openapi("SessionAccess", {
		description: "Who owns a session and whom it is shared with",
		example: { sessionId: "ses_Qm9wYXJ0aWFs", owner: "alice", grants: [{ principal: "carol", can: ["answer"] }] },
	});
export type SessionAccessRecord = z.infer<typeof SessionAccessRecord>;

/** Where access records also go so that other nodes know them (cluster mode: PostgreSQL). */
export interface AccessMirror {
	saveAccess(sessionId: string, owner: string, grants: SessionAccessRecord["grants"]): void;
}

/**
 * Where the node keeps owners and shares across restarts (src/store/sqlite/access.ts: a table of
 * gateway.db beside the registry's). Declared here so access rules depend on no database;
 * server.ts hands one over. Writes after the database closed do nothing.
 */
export interface AccessStore {
	/** Every stored record, read once as the gateway starts. */
	load(): SessionAccessRecord[];
	/** A change a client asked for: throws 507 insufficient_storage when the disk refuses it. */
	save(record: SessionAccessRecord): void;
	/** A record another node wrote (cluster mode), kept here as it came: its errors are not a client's. */
	keep(record: SessionAccessRecord): void;
	remove(sessionId: string): void;
}

/**
 * Who owns each session and whom it is shared with, cached in memory over an AccessStore. A
 * session with no record (made before principals existed) belongs to the admin. Without a store
 * (an app built for a test) it lives in memory only.
 */
export class SessionAccess {
	readonly #store: AccessStore | undefined;
	readonly #records = new Map<string, SessionAccessRecord>();
	readonly #mirror: AccessMirror | undefined;
	readonly #changed = new Set<(sessionId: string) => void>();

	constructor(store?: AccessStore, mirror?: AccessMirror) {
		this.#store = store;
		this.#mirror = mirror;
		for (const record of store?.load() ?? []) this.#records.set(record.sessionId, record);
	}

	get(sessionId: string): SessionAccessRecord {
		return this.#records.get(sessionId) ?? { sessionId, owner: "admin", grants: [] };
	}

	setOwner(sessionId: string, owner: string): void {
		this.#save({ sessionId, owner, grants: [] });
	}

	share(sessionId: string, grants: SessionAccessRecord["grants"]): SessionAccessRecord {
		const record = { ...this.get(sessionId), grants };
		this.#save(record);
		return record;
	}

	forget(sessionId: string): void {
		this.#records.delete(sessionId);
		this.#store?.remove(sessionId);
	}

	/** A record another node wrote (cluster mode: the session was taken over), kept here from now on. */
	preload(sessionId: string, owner: string, grants: unknown[]): void {
		const parsed = SessionGrant.array().safeParse(grants);
		this.#remember({ sessionId, owner, grants: parsed.success ? parsed.data : [] });
	}

	/** The rights `principal` holds on a session; the owner holds them all. */
	rights(sessionId: string, principal: string): ReadonlySet<SessionRight> {
		return rightsIn(this.get(sessionId), principal);
	}

	/** Calls `listener` after a session's owner or grants changed (its open streams are checked again). */
	onChange(listener: (sessionId: string) => void): () => void {
		this.#changed.add(listener);
		return () => this.#changed.delete(listener);
	}

	/** Stored first, in effect after: a grant the disk did not take is refused (507), not half kept. */
	#save(record: SessionAccessRecord): void {
		this.#store?.save(record);
		this.#records.set(record.sessionId, record);
		this.#mirror?.saveAccess(record.sessionId, record.owner, record.grants);
		for (const listener of this.#changed) listener(record.sessionId);
	}

	#remember(record: SessionAccessRecord): void {
		this.#records.set(record.sessionId, record);
		this.#store?.keep(record);
	}
}

/** The rights `principal` holds by `record`; the owner holds them all. */
export function rightsIn(record: SessionAccessRecord, principal: string): ReadonlySet<SessionRight> {
	if (record.owner === principal) return new Set(SessionRight.options);
	const can = new Set(record.grants.filter((g) => g.principal === principal).flatMap((g) => g.can));
	if (can.has("write")) can.add("read");
	return can;
}
