import { z } from "@hono/zod-openapi";
import type { Session } from "../../../sessions/session.ts";
import { SessionStatus } from "../../../sessions/session.ts";
import type { StoredSession } from "../../../sessions/session-store.ts";

export const SessionView = z
	.object({
		id: z.string().openapi({ example: "ses_Qm9wYXJ0aWFs" }),
		name: z.string().nullable(),
		status: SessionStatus,
		node: z.string().nullable().openapi({
			description:
				"Cluster mode: the node whose pi runs this session (its `--node-name`, as in `/v1/info` and the cluster metrics); null while it is stopped (no node holds it: the next command starts it on the node that receives it). Always null on a single gateway (no cluster)",
		}),
		pid: z.number().int().nullable(),
		cwd: z.string(),
		persist: z.boolean(),
		resumable: z.boolean().openapi({
			description: "pi can be started again on this session's file (POST …/resume); false for persist:false",
		}),
		createdAt: z.string().openapi({ format: "date-time" }),
		lastActivityAt: z.string().openapi({ format: "date-time" }),
		piSessionId: z.string().nullable(),
		piSessionFile: z.string().nullable(),
		model: z.object({ provider: z.string(), id: z.string() }).nullable(),
		thinkingLevel: z.string().nullable(),
		currentRunId: z.string().nullable().openapi({ description: "Run id of the prompt that started the active run" }),
		queuedCommands: z.number().int(),
		pendingApprovals: z.number().int(),
		lastEventId: z.number().int().openapi({ description: "Sequence number of the newest event" }),
		folderRestore: z
			.object({
				complete: z.boolean(),
				at: z.string().openapi({ format: "date-time" }),
				from: z
					.string()
					.nullable()
					.openapi({ description: "The node whose stored copy was restored (null: none was stored)" }),
				restored: z.number().int().openapi({ description: "Files, folders and links restored" }),
				missing: z.array(z.string()).openapi({ description: "Paths that could not be restored (at most 100)" }),
				missingCount: z.number().int(),
				kept: z.array(z.string()).openapi({
					description:
						"Files of a folder other sessions may share that differ from the stored copy, left as this node had them (at most 100)",
				}),
				detail: z.string().nullable().openapi({ description: "Why it is not complete" }),
			})
			.nullable()
			.openapi({
				description:
					"Cluster mode: the session's folder as the node running it found it when it took the session over from another node (restored from PostgreSQL under this node's workspace root; `complete: false` names what is missing). Null when no folder was restored here (the session started here, or its folder is on a shared --workspace-root)",
			}),
		exit: z
			.object({
				code: z.number().int().nullable(),
				signal: z.string().nullable(),
				at: z.string().openapi({ format: "date-time" }),
				stderrTail: z.string(),
			})
			.nullable(),
	})
	.openapi("Session");
export type SessionView = z.infer<typeof SessionView>;

/** `node`: this node's id in cluster mode, undefined on a single gateway. */
export function viewOf(session: Session, node?: string): SessionView {
	const { piState, exit } = session;
	return {
		id: session.id,
		name: session.name ?? null,
		status: session.status,
		node: node !== undefined && session.status !== "stopped" ? node : null,
		pid: session.pid ?? null,
		cwd: session.cwd,
		persist: session.persist,
		resumable: session.resumable,
		createdAt: session.createdAt.toISOString(),
		lastActivityAt: new Date(session.lastActivityAt).toISOString(),
		piSessionId: piState.sessionId ?? null,
		piSessionFile: piState.sessionFile ?? null,
		model: piState.model ?? null,
		thinkingLevel: piState.thinkingLevel ?? null,
		currentRunId: session.currentRunId ?? null,
		queuedCommands: session.queueDepth,
		pendingApprovals: session.approvals.pendingCount,
		lastEventId: session.events.lastSeq,
		folderRestore: session.folderRestore ?? null,
		exit: exit ? { code: exit.code, signal: exit.signal, at: exit.at, stderrTail: exit.stderrTail } : null,
	};
}

/** A session no live node holds (cluster mode), as its stored record says: stopped until asked for. */
export function storedViewOf(record: StoredSession): SessionView {
	const { piState } = record;
	return {
		id: record.id,
		name: record.name ?? null,
		status: "stopped",
		node: null,
		pid: null,
		cwd: record.cwd,
		persist: record.persist,
		resumable: record.persist && piState.sessionFile !== undefined,
		createdAt: record.createdAt,
		lastActivityAt: new Date(record.lastActivityAt).toISOString(),
		piSessionId: piState.sessionId ?? null,
		piSessionFile: piState.sessionFile ?? null,
		model: piState.model ?? null,
		thinkingLevel: piState.thinkingLevel ?? null,
		currentRunId: null,
		queuedCommands: 0,
		pendingApprovals: 0,
		lastEventId: record.lastSeq,
		folderRestore: null,
		exit: null,
	};
}
