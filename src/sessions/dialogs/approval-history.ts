import { eventJson, type LoggedEvent } from "../events/event-log.ts";
import type { Approval } from "./approvals.ts";

/** What a page of history is filtered by. */
export interface ApprovalHistoryQuery {
	status?: string;
	sessionId?: string;
}

/**
 * Where resolved approvals are kept, bounded by age and by count: gateway.db
 * (src/store/sqlite/approval-history.ts), or in cluster mode the cluster's PostgreSQL
 * (src/store/postgres/shared-records.ts), read whole through any node. server.ts picks one.
 */
export interface ApprovalHistoryStore {
	/** False once the node's database closed (shutdown): what resolves after that is not recorded. */
	readonly open: boolean;
	/** Adds (or replaces) one approval; may throw on a full disk. */
	add(approval: Approval, resolvedAt: string): void;
	/** Newest first; `before` is the `nextCursor` of an earlier page. */
	page(
		query: ApprovalHistoryQuery,
		limit: number,
		before?: number,
	): Promise<{ records: Approval[]; nextCursor: string | null }>;
}

/**
 * Every resolved approval — who, when, what — kept so the record outlives the session's in-memory
 * list and a gateway restart. Fed from the event hub.
 */
export class ApprovalHistory {
	readonly #store: ApprovalHistoryStore;
	#unsubscribe: (() => void) | undefined;

	constructor(store: ApprovalHistoryStore) {
		this.#store = store;
	}

	start(hub: { subscribeAll(listener: (sessionId: string, event: LoggedEvent) => void): () => void }): void {
		this.#unsubscribe = hub.subscribeAll((_sessionId, event) => {
			if (event.type !== "approval_resolved" || !this.#store.open) return;
			try {
				const { approval } = eventJson<{ approval: Approval }>(event);
				this.#store.add(approval, approval.resolvedAt ?? new Date().toISOString());
			} catch {
				// A full disk loses history rows, never an answer: the approval itself went through.
			}
		});
	}

	stop(): void {
		this.#unsubscribe?.();
	}

	/** Newest first; `before` is the `nextCursor` of an earlier page. */
	async list(query: { status?: string; sessionId?: string; limit: number; before?: number }): Promise<{
		approvals: Approval[];
		nextCursor: string | null;
	}> {
		const { records, nextCursor } = await this.#store.page(
			{ status: query.status, sessionId: query.sessionId },
			query.limit,
			query.before,
		);
		return { approvals: records, nextCursor };
	}
}
