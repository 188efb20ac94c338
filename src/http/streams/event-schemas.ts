// Over 300 lines on purpose: every SSE event the spec declares, in one union a generated client
// types from; split by topic, a new event type could be added to a file and missed by the union.
import { z } from "@hono/zod-openapi";
import { Approval, ToolCall, ToolCallStatus } from "../../sessions/dialogs/index.ts";
import { egressDenialReasons } from "../../sessions/relay/index.ts";
import { LimitHit } from "../../sessions/runs/index.ts";
import { SessionStatus } from "../../sessions/session/index.ts";
import { AgentMessage, Usage } from "../transport/schemas.ts";

/**
 * The `data:` of each SSE frame, one schema per event type, so generated clients know what can
 * arrive. pi's events are documented in its docs/json.md; they are loose here because pi may add
 * fields. The SSE `event:` field always equals `type`. Over 300 lines because it is one table:
 * every event the streams carry, each field described, read as one list.
 */
const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S, description: string) =>
	z
		.looseObject({ type: z.literal(type).describe(`Always \`${type}\`; the frame's \`event:\``), ...shape })
		.openapi(`Event_${type}`, { description });

// Fields several events share, described once.
const sessionId = z.string().describe("The gateway session the event belongs to");
const toolCallId = z.string().describe("pi's id of the tool call: the same on its start, updates and end");
const toolName = z.string().describe("The tool's name (`bash`, `read`, `edit`, …)");
const attempt = z.number().describe("Which attempt this is, from 1");
const maxAttempts = z.number().describe("How many attempts pi makes at most");
const delayMs = z.number().describe("Milliseconds until the attempt");
const errorMessage = z.string().optional().describe("The error that led to it");
const detail = z.string().describe("What happened, in words");

const piEvents = [
	ev(
		"response",
		{
			id: z.string().optional().describe("The command's id (the gateway's `runId` or `commandId`)"),
			command: z.string().describe("The command's type"),
			success: z.boolean().describe("pi carried it out"),
			data: z.unknown().optional().describe("pi's answer, when it has one"),
			error: z.string().optional().describe("Why pi refused it, when `success` is false"),
		},
		"pi's answer to a command that changes the session (answers to reads are not logged)",
	),
	ev("agent_start", {}, "A low-level agent run started"),
	ev(
		"agent_end",
		{
			messages: z.array(AgentMessage).describe("The messages of the run"),
			willRetry: z.boolean().optional().describe("pi retries the run on its own (a provider error)"),
		},
		"A low-level run ended (retries, compaction or queued messages may follow)",
	),
	ev(
		"agent_settled",
		{
			aborted: z.boolean().describe("The run was aborted"),
			synthetic: z.literal(true).optional().openapi({
				description:
					"Set when the gateway synthesised this event for an older pi (0.73) that has none: after its agent_end, with nothing queued in pi",
			}),
		},
		"pi will do nothing more on its own: the end of a user-visible run",
	),
	ev("turn_start", {}, "An assistant turn started"),
	ev(
		"turn_end",
		{ message: AgentMessage, toolResults: z.array(AgentMessage).describe("The results of the turn's tool calls") },
		"An assistant turn and its tool calls finished",
	),
	ev("message_start", { message: AgentMessage }, "A message started"),
	ev(
		"message_update",
		{
			usage: Usage.optional(),
			assistantMessageEvent: z
				.looseObject({
					type: z.string().describe("`text_delta`, `thinking_delta`, `toolcall_delta`, `text_start`, …"),
					contentIndex: z.number().optional().describe("Which content block of the message it changes"),
					delta: z.string().optional().describe("The text added"),
				})
				.describe("What changed, as the provider streamed it"),
		},
		"A delta of the assistant message (text_delta, thinking_delta, toolcall_delta, …)",
	),
	ev("message_end", { message: AgentMessage }, "A message completed: the authoritative final message"),
	ev(
		"tool_execution_start",
		{ toolCallId, toolName, args: z.unknown().describe("The arguments the model gave it") },
		"A tool started",
	),
	ev(
		"tool_execution_update",
		{ toolCallId, toolName, partialResult: z.unknown().describe("Its output so far") },
		"A tool reported partial output",
	),
	ev(
		"tool_execution_end",
		{
			toolCallId,
			toolName,
			result: z.unknown().describe("What it gave the model"),
			isError: z.boolean().describe("It failed"),
		},
		"A tool finished",
	),
	ev(
		"queue_update",
		{
			steering: z.array(z.string()).describe("Steering messages waiting"),
			followUp: z.array(z.string()).describe("Follow-up messages waiting"),
		},
		"The steering or follow-up queue changed",
	),
	ev(
		"compaction_start",
		{ reason: z.string().describe("Why: `manual`, `threshold` or `overflow`") },
		"Compaction began",
	),
	ev(
		"compaction_end",
		{
			reason: z.string().describe("Why it ran: `manual`, `threshold` or `overflow`"),
			result: z.unknown().optional().describe("What it did (as `POST …/compact` answers)"),
			aborted: z.boolean().describe("It was aborted"),
			willRetry: z.boolean().optional().describe("pi tries again"),
			errorMessage: z.string().optional().describe("Why it failed"),
		},
		"Compaction ended (`result` when it succeeded, `errorMessage` when it failed)",
	),
	ev("auto_retry_start", { attempt, maxAttempts, delayMs, errorMessage }, "An automatic retry was scheduled"),
	ev(
		"auto_retry_end",
		{
			success: z.boolean().describe("A retry succeeded"),
			attempt,
			finalError: z.string().optional().describe("The last error, when every attempt failed"),
		},
		"Automatic retrying ended",
	),
	ev(
		"summarization_retry_scheduled",
		{ attempt, maxAttempts, delayMs, errorMessage },
		"A compaction or branch summary will be retried",
	),
	ev(
		"summarization_retry_attempt_start",
		{
			source: z.string().describe("What is being summarised: `compaction` or `branchSummary`"),
			reason: z.string().optional().describe("A compaction's trigger: `manual`, `threshold` or `overflow`"),
		},
		"A summarization retry started",
	),
	ev("summarization_retry_finished", {}, "Summarization retrying ended"),
	ev(
		"bash_execution_update",
		{
			id: z.string().optional().describe("The `bash` command's id (the gateway's `commandId`)"),
			delta: z.string().describe("The output added"),
		},
		"Output of a `bash` command, chunk by chunk",
	),
	ev(
		"extension_ui_request",
		{
			id: z.string().describe("pi's id of the request (an approval's id, for a dialog)"),
			method: z.string().openapi({
				description:
					"Dialogs: `select`, `confirm`, `input`, `editor` (each also an approval); fire-and-forget: `notify`, `setStatus`, `setWidget`, `setTitle`, `set_editor_text`",
			}),
			// pi's fields per method (RpcExtensionUIRequest), all optional here so one flat model reads them all.
			title: z.string().optional().openapi({ description: "select, confirm, input, editor, setTitle" }),
			message: z.string().optional().openapi({ description: "confirm, notify" }),
			options: z.array(z.string()).optional().openapi({ description: "select: the allowed values" }),
			placeholder: z.string().optional().openapi({ description: "input" }),
			prefill: z.string().optional().openapi({ description: "editor" }),
			timeout: z.number().optional().openapi({ description: "select, confirm, input: milliseconds pi waits" }),
			notifyType: z.string().optional().openapi({ description: "notify: `info`, `warning` or `error`" }),
			statusKey: z.string().optional().openapi({ description: "setStatus" }),
			statusText: z.string().optional().openapi({ description: "setStatus (absent: clear the status)" }),
			widgetKey: z.string().optional().openapi({ description: "setWidget" }),
			widgetLines: z.array(z.string()).optional().openapi({ description: "setWidget (absent: remove the widget)" }),
			widgetPlacement: z.string().optional().openapi({ description: "setWidget: `aboveEditor` or `belowEditor`" }),
			text: z.string().optional().openapi({ description: "set_editor_text" }),
		},
		"An extension asked for UI: dialogs also become approvals",
	),
	ev(
		"extension_error",
		{
			extensionPath: z.string().describe("The extension's file"),
			event: z.string().describe("The event its handler was called for"),
			error: z.string().describe("What it threw"),
		},
		"An extension handler threw",
	),
	ev(
		"session_info_changed",
		{ name: z.string().optional().describe("The new name; absent when it was cleared") },
		"The session's display name changed",
	),
	ev("thinking_level_changed", { level: z.string().describe("The new level") }, "The thinking level changed"),
	ev(
		"entry_appended",
		{ entry: z.unknown().describe("The entry, as pi's session file holds it") },
		"An extension appended a custom session entry",
	),
];

const gatewayEvents = [
	ev(
		"stream_open",
		{
			sessionId: sessionId.optional(),
			after: z.number().optional().openapi({ description: "The stream holds every event after this position" }),
			lastEventId: z.number().optional().openapi({ description: "The session's last sequence number on joining" }),
			firstAvailable: z.number().optional().openapi({ description: "The oldest sequence number the log still holds" }),
			status: SessionStatus.optional(),
			runId: z.string().optional().openapi({ description: "Streamed prompt/steer/follow-up: the command's id" }),
			commandId: z.string().optional().openapi({ description: "Streamed bash: the command's id" }),
			resumed: z.boolean().optional().openapi({
				description:
					"A retried POST with Last-Event-ID: this stream continues that command's run (nothing reached pi again)",
			}),
			sessions: z
				.array(
					z.object({
						id: z.string().describe("The session's id"),
						lastEventId: z.number().describe("Its last sequence number on joining"),
						firstAvailable: z.number().describe("The oldest sequence number its log still holds"),
						status: SessionStatus,
					}),
				)
				.optional()
				.openapi({ description: "GET /v1/events: every session and its position on joining" }),
		},
		"Gateway: always the first frame; where this stream joined the log",
	),
	ev("session_status", { sessionId, status: SessionStatus }, "Gateway: the session's status changed"),
	ev(
		"session_exit",
		{
			sessionId,
			code: z.number().nullable().describe("pi's exit code; null when a signal ended it"),
			signal: z.string().nullable().describe("The signal that ended it (`SIGTERM`, …); null when it exited"),
			reason: z.string().openapi({
				description:
					"`shutdown`, `idle`, `lru` (the gateway stopped pi; `resumable` says whether it can start again), `stopped` (DELETE), `exited`, `crashed`, or `lost`: pi died with its gateway or node (an unclean stop; this frame was written when the session was restored)",
			}),
			stderrTail: z.string().describe("The last lines pi wrote to stderr"),
			resumable: z
				.boolean()
				.optional()
				.describe("Whether a command can start pi again on the session's conversation (it was persisted)"),
		},
		"Gateway: pi exited; the stream ends after this frame",
	),
	ev(
		"run_lost",
		{
			sessionId,
			runId: z.string().openapi({ description: "The run that was in progress (the id of the prompt that started it)" }),
			reason: z.string().describe("What happened, in words"),
		},
		"Gateway: the run in progress died with its gateway or node (an unclean stop: SIGKILL, a crash); its end was never recorded and it has no `agent_settled`. After a restart (or on the node that took the session over) it comes right after the `gap` a resumed stream gets, followed by `session_exit` (`reason: lost`); the session is `stopped` and can be resumed",
	),
	ev("approval_requested", { sessionId, approval: Approval }, "Gateway: a dialog opened and waits for an answer"),
	ev("approval_resolved", { sessionId, approval: Approval }, "Gateway: a dialog was answered, expired or cancelled"),
	ev(
		"tool_call_requested",
		{
			sessionId,
			toolCallId: z.string().describe("The call's id: answer it at POST /v1/sessions/{id}/tool-calls/{toolCallId}"),
			name: z.string().describe("The client tool the model called"),
			arguments: z.unknown().describe("The model's arguments, checked against the tool's `parameters`"),
			runId: z.string().nullable().describe("The run the call belongs to"),
			toolCall: ToolCall,
		},
		"Gateway: the model called one of the session's client tools; the run waits for the program's answer",
	),
	ev(
		"tool_call_resolved",
		{
			sessionId,
			toolCallId: z.string().describe("The call's id"),
			name: z.string().describe("The client tool"),
			runId: z.string().nullable().describe("The run the call belongs to"),
			status: ToolCallStatus,
			toolCall: ToolCall,
		},
		"Gateway: a client tool call was answered, or cancelled (abort, pi's exit, the timeout); `toolCall.result` is what the model got",
	),
	ev(
		"run_output",
		{
			sessionId,
			runId: z.string().describe("The run command's id (its `runId`)"),
			output: z.unknown().optional().describe("The JSON value that validated against the run's outputSchema"),
			error: z
				.object({
					message: z.string().describe("Why no answer validated"),
					attempts: z.number().int().describe("Answers read: the first and each repair turn's"),
				})
				.optional()
				.describe("Set instead of `output` when no answer validated after the repair turns"),
		},
		"Gateway: a run with `outputSchema` has its structured answer (`output`) or gave up (`error`); right before the run's `agent_settled`",
	),
	ev(
		"egress_denied",
		{
			sessionId,
			host: z.string().describe("The host the tool asked for (empty when the request named none)"),
			port: z.number().int().describe("The port it asked for (0 when the request named none)"),
			reason: z.enum(egressDenialReasons).openapi({
				description:
					"`not_allowed`: host:port is not in --sandbox-allow-hosts; `private_address`: the host resolves to a loopback, private, link-local or metadata address, or the gateway's own, that no entry names; `bad_request`: not a proxy request the proxy reads (an http:// URL in absolute form, or CONNECT host:port)",
			}),
			detail,
		},
		"Gateway: the sandbox's egress proxy refused a tool's request (403, or 400 for `bad_request`); counted in pi_gateway_egress_denied_total",
	),
	ev(
		"run_limit_reached",
		{ sessionId, runId: z.string().describe("The run command's id (its `runId`)"), limit: LimitHit },
		"Gateway: a run went past one of its `limits`; the gateway aborts it, and its `agent_settled` follows",
	),
	ev(
		"run_changes",
		{
			sessionId,
			runId: z.string().describe("The run whose changes these are"),
			files: z
				.array(
					z.object({
						path: z.string().describe("The file's path in the session's folder"),
						status: z.enum(["added", "modified", "deleted"]).describe("What the run did to it"),
					}),
				)
				.nullable()
				.openapi({
					description:
						"The paths the run changed in the session's folder (at most 100); null when no snapshot could be taken (`error`)",
				}),
			truncated: z.boolean().openapi({ description: "More paths changed than are listed" }),
			unreadable: z.array(z.string()).optional().openapi({
				description:
					"Files git could not read when the run settled (a tracked file replaced by a FIFO, say; at most 100): the snapshot has them as an earlier one had them, so an edit to them is not in `files`",
			}),
			error: z.string().optional().describe("Why no snapshot could be taken"),
		},
		"Gateway: a run settled and its folder was snapshotted (after its agent_settled); the diffs are at GET …/changes?runId=",
	),
	ev(
		"folder_sync",
		{
			sessionId,
			code: z.enum(["folder_too_large", "folder_sync_failed"]).describe("Too large, or the database failed"),
			error: z.string().describe("What went wrong, in words"),
			bytes: z.number().nullable().openapi({ description: "Bytes of the files kept" }),
			maxBytes: z.number().openapi({ description: "--workspace-sync-max-bytes" }),
			omitted: z.number().openapi({ description: "Files left out" }),
			paths: z.array(z.string()).openapi({ description: "The first 100 left out" }),
		},
		"Gateway, cluster mode: the session's folder could not be kept in PostgreSQL in full (past --workspace-sync-max-bytes, or the database failed): what is left out would be missing on a node that takes the session over",
	),
	ev(
		"folder_restore",
		{
			sessionId,
			complete: z.literal(false).describe("Always false: only an incomplete restore is an event"),
			restored: z.number().describe("Files restored"),
			missing: z.array(z.string()).describe("Paths that could not be restored (the first 100)"),
			missingCount: z.number().describe("How many paths could not be restored"),
			detail: z.string().nullable().describe("Why, when known"),
		},
		"Gateway, cluster mode: this node took the session over and could not restore its folder in full; `missing` names what is not there (also the session's `folderRestore`)",
	),
	ev(
		"gap",
		{
			sessionId,
			after: z.number().describe("The position the client asked to resume after"),
			firstAvailable: z.number().describe("The oldest sequence number the log still holds"),
			lost: z.number().optional().openapi({
				description:
					"How many events after `after` are gone; absent when that cannot be known: the range spans an unclean stop of the gateway (or of the node that ran the session), whose last events were never written and whose numbers were skipped ahead",
			}),
		},
		"Gateway: the asked-for position is older than the log; the events after `after` are gone (`lost` of them, when known) and the stream goes on from `firstAvailable` (the frame's id is `firstAvailable - 1`)",
	),
	ev(
		"dropped",
		{
			reason: z.string().describe("Why (`slow_consumer`)"),
			detail,
			resumeFrom: z
				.union([z.number(), z.string()])
				.nullable()
				.describe("The id of the last frame this client was sent (Last-Event-ID for the reconnect); null if none"),
		},
		"Gateway: this client fell more than the gateway's buffer behind and is cut off (the last frame; it has no id); reconnect with Last-Event-ID = `resumeFrom`, the id of the last frame it was sent",
	),
	ev(
		"line_dropped",
		{
			sessionId,
			chars: z.number().describe("How long the line was"),
			reason: z.string().describe("Why it was skipped, in words"),
		},
		"Gateway: pi printed a line longer than the cap; it was skipped",
	),
	ev(
		"shutdown",
		{ reason: z.string().describe("Why, in words") },
		"Gateway (GET /v1/events): the gateway is shutting down; the stream ends",
	),
	ev(
		"revoked",
		{ reason: z.literal("access_revoked").describe("Always `access_revoked`"), detail },
		"Gateway: the principal that opened this stream may no longer read it — its share was taken back (PUT …/access) or its API key removed from the keys file — so the stream ends at once (the last frame; it has no id). A reconnect is refused (404, or 401 for a revoked key)",
	),
	ev(
		"error",
		{
			status: z.number().describe("The HTTP status the error would have had"),
			code: z.string().describe("The problem code, as a problem+json answer would have had it"),
			detail,
		},
		"Gateway: a streamed command failed after its stream began (pi did not answer in time, or exited); the last frame",
	),
];

const [firstEvent, ...otherEvents] = [...piEvents, ...gatewayEvents] as [(typeof piEvents)[number], ...typeof piEvents];
export const StreamEvent = z.discriminatedUnion("type", [firstEvent, ...otherEvents]).openapi("StreamEvent", {
	description: "The JSON of one SSE frame's `data:`: a pi event or a gateway event, told apart by `type`",
});

/**
 * The schema of every text/event-stream answer: what one frame's `data:` holds, which is what SSE
 * clients (EventSource, hey-api's generated SDKs) hand over per event. The framing around it is
 * described in words (`eventStreamFraming`): OpenAPI 3.1 has no schema for the frame itself.
 */
export const EventStreamDoc = StreamEvent;

export const eventStreamFraming =
	"Each frame is `id: N` (the session's sequence number; `<sessionId>:<seq>` on GET /v1/events; `dropped`, `shutdown`, `revoked` and `error` frames have none), `event: TYPE` (always equal to `data.type`) and `data: JSON` on one line: pi's event exactly as pi printed it, or a gateway event; the schema is that `data` (`StreamEvent`). `: heartbeat` comments come between frames. pi may add event types and fields: skip what you do not know.";
