import { z } from "@hono/zod-openapi";
import { activityOf } from "../../../sessions/events/index.ts";
import type { StoredSession } from "../../../sessions/registry/index.ts";
import { BudgetView } from "../../../sessions/runs/index.ts";
import type { Session } from "../../../sessions/session/index.ts";
import { SessionStatus } from "../../../sessions/session/index.ts";

/** A session as the gateway answers it, for the spec's examples. */
export const sessionExample = {
	id: "ses_Qm9wYXJ0aWFs",
	name: "demo",
	status: "idle",
	node: null,
	pid: 4242,
	cwd: "/var/lib/pi-gateway/workspaces/ses_Qm9wYXJ0aWFs",
	persist: true,
	resumable: true,
	createdAt: "2026-12-01T10:00:00.000Z",
	lastActivityAt: "2026-12-01T10:00:05.000Z",
	piSessionId: "0b6f1c2e-4a7d-4e0b-9c1a-3f5e2d8b7a61",
	piSessionFile: "/var/lib/pi-gateway/agent/sessions/2026-12-01T10-00-00.jsonl",
	model: { provider: "pi-gateway-demo", id: "demo" },
	thinkingLevel: "off",
	currentRunId: null,
	queuedCommands: 0,
	pendingApprovals: 0,
	pendingToolCalls: 0,
	budget: { maxTokens: 1000000, maxCostUsd: null, usedTokens: 48213, usedCostUsd: 0.41, exhausted: null },
	lastEventId: 12,
	folderRestore: null,
	exit: null,
	preview: { role: "assistant", text: "The tests pass now: 42 of 42." },
	lastError: null,
};

export const SessionView = z
	.object({
		id: z.string().openapi({ description: "The session's id", example: "ses_Qm9wYXJ0aWFs" }),
		name: z.string().nullable().describe("Its display name; null until one is set"),
		status: SessionStatus,
		node: z.string().nullable().openapi({
			description:
				"Cluster mode: the node whose pi runs this session (its `--node-name`, as in `/v1/info` and the cluster metrics); null while it is stopped (no node holds it: the next command starts it on the node that receives it). Always null on a single gateway (no cluster)",
		}),
		pid: z.number().int().nullable().describe("The pi process's id; null while no pi runs"),
		cwd: z.string().describe("The folder pi works in (the session's folder)"),
		persist: z.boolean().describe("pi keeps a session file, so the session can be resumed (false: ephemeral)"),
		resumable: z.boolean().openapi({
			description: "pi can be started again on this session's file (POST …/resume); false for persist:false",
		}),
		createdAt: z.string().openapi({ format: "date-time", description: "When it was created" }),
		lastActivityAt: z.string().openapi({
			format: "date-time",
			description:
				"When a command that changes the session or one of its events last went through it (reads such as `GET …/messages` or `…/models` do not count, so looking at a session does not make it recent)",
		}),
		piSessionId: z.string().nullable().describe("pi's own session id; null until pi reported it"),
		piSessionFile: z.string().nullable().describe("pi's session file; null for an ephemeral session"),
		model: z
			.object({
				provider: z.string().describe("The model's provider"),
				id: z.string().describe("The model's id at that provider"),
			})
			.nullable()
			.describe("The model in use; null until pi reported it"),
		thinkingLevel: z.string().nullable().describe("The thinking level in use; null until pi reported it"),
		currentRunId: z.string().nullable().openapi({ description: "Run id of the prompt that started the active run" }),
		queuedCommands: z.number().int().describe("Commands waiting in the session's queue"),
		pendingApprovals: z.number().int().describe("Dialogs waiting for an answer"),
		pendingToolCalls: z
			.number()
			.int()
			.describe("Client tool calls waiting for the program's answer (GET …/tool-calls?status=pending)"),
		budget: BudgetView,
		lastEventId: z.number().int().openapi({ description: "Sequence number of the newest event" }),
		folderRestore: z
			.object({
				complete: z.boolean().describe("Everything was restored"),
				at: z.string().openapi({ format: "date-time", description: "When it was restored" }),
				from: z
					.string()
					.nullable()
					.openapi({ description: "The node whose stored copy was restored (null: none was stored)" }),
				restored: z.number().int().openapi({ description: "Files, folders and links restored" }),
				missing: z.array(z.string()).openapi({ description: "Paths that could not be restored (at most 100)" }),
				missingCount: z.number().int().describe("How many paths could not be restored"),
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
				code: z.number().int().nullable().describe("pi's exit code; null when a signal ended it"),
				signal: z.string().nullable().describe("The signal that ended it; null when it exited"),
				at: z.string().openapi({ format: "date-time", description: "When it exited" }),
				stderrTail: z.string().describe("The last lines pi wrote to stderr"),
			})
			.nullable()
			.describe("How pi last exited; null while it runs or never did"),
		preview: z
			.object({
				role: z.enum(["user", "assistant", "tool"]).describe("Who said it, or `tool`: a tool running now"),
				text: z
					.string()
					.describe("The message's text on one line, or the running tool's command or path (at most 160 characters)"),
			})
			.nullable()
			.openapi({
				description:
					"The last message said in the session, or the tool it runs right now (bash as `$ command`), for a list of sessions; null when none was seen since its pi started under this gateway",
			}),
		lastError: z
			.object({
				message: z.string().describe("The provider's or pi's error message"),
				retries: z.number().int().describe("How many times pi retried the call before giving up (its auto-retry)"),
			})
			.nullable()
			.openapi({
				description:
					"The last run ended with this error (after pi's retries); null when it did not, or once a new prompt is sent",
			}),
	})
	.openapi("Session", {
		description: "A gateway session: one pi process (or its stored state) and what the gateway knows of it",
		example: sessionExample,
	});
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
		pendingToolCalls: session.toolCalls.pendingCount,
		budget: session.budget.view(),
		lastEventId: session.events.lastSeq,
		folderRestore: session.folderRestore ?? null,
		exit: exit ? { code: exit.code, signal: exit.signal, at: exit.at, stderrTail: exit.stderrTail } : null,
		...activityOf(session),
	};
}

/** The budget a stored record holds (its create body's limits until the record has one of its own). */
function storedBudgetView({ budget, options }: StoredSession): BudgetView {
	const limits = budget ?? options.budget ?? {};
	const usedTokens = budget?.usedTokens ?? 0;
	const usedCostUsd = budget?.usedCostUsd ?? 0;
	const exhausted =
		limits.maxTokens !== undefined && usedTokens >= limits.maxTokens
			? "tokens"
			: limits.maxCostUsd !== undefined && usedCostUsd >= limits.maxCostUsd
				? "cost"
				: null;
	return {
		maxTokens: limits.maxTokens ?? null,
		maxCostUsd: limits.maxCostUsd ?? null,
		usedTokens,
		usedCostUsd,
		exhausted,
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
		pendingToolCalls: 0,
		budget: storedBudgetView(record),
		lastEventId: record.lastSeq,
		folderRestore: null,
		exit: null,
		preview: null,
		lastError: null,
	};
}
