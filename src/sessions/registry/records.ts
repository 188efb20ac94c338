import { z } from "zod";
import { CreateSessionBody } from "../process/spawn.ts";
import { StoredBudget } from "../session/budget.ts";
import type { StoredSession } from "./session-store.ts";

/** A row as it must look to come back; anything else is skipped, not fatal. */
const StoredRecord = z.object({
	id: z.string().min(1),
	name: z.string().optional(),
	cwd: z.string().min(1),
	persist: z.boolean(),
	options: CreateSessionBody,
	piState: z.looseObject({ sessionId: z.string().optional(), sessionFile: z.string().optional() }),
	createdAt: z.string(),
	lastActivityAt: z.number(),
	lastSeq: z.number().int().min(0),
	pendingApprovals: z.array(z.string()).optional(),
	pendingToolCalls: z.array(z.string()).optional(),
	live: z.boolean().optional(),
	runId: z.string().optional(),
	budget: StoredBudget.optional(),
});

/** Tombstones older than this are forgotten: after a week an unknown id is simply 404. */
export const tombstoneMs = 7 * 24 * 3600_000;

/**
 * One stored row (its id and its JSON text) read back, the same for every backend: one
 * unreadable row must not keep the others (or the gateway) from coming back, so it is reported
 * and left in place, untouched, for someone to look at.
 */
export function parseStoredRecord(row: {
	id: string;
	record: string;
}): { record: StoredSession } | { id: string; skip: string } {
	let parsed: unknown;
	try {
		parsed = JSON.parse(row.record);
	} catch (error) {
		return { id: row.id, skip: `not JSON: ${(error as Error).message}` };
	}
	const result = StoredRecord.safeParse(parsed);
	if (!result.success || result.data.id !== row.id) {
		return { id: row.id, skip: result.success ? "its id does not match its row" : z.prettifyError(result.error) };
	}
	return { record: result.data as StoredSession };
}
