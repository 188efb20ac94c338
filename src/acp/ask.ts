import type { AgentContext, ClientCapabilities, SessionUpdate } from "@agentclientprotocol/sdk";
import { GatewayError, type PiGateway } from "../client/index.ts";
import { announce, mapEvent, type TurnState } from "./mapping.ts";
import {
	type Answer,
	type Approval,
	answerFor,
	answerForElicitation,
	denial,
	elicitationSchema,
	permissionChoices,
	permissionTitle,
} from "./permissions.ts";

/** What asking needs of the turn it happens in. */
export interface AskingTurn {
	state: TurnState;
	/** Editor requests open, by approval id: aborted when someone else answers or the turn ends. */
	asking: Map<string, AbortController>;
}

export interface Ask {
	gateway: PiGateway;
	client: AgentContext;
	sessionId: string;
	turn: AskingTurn;
	approval: Approval;
	capabilities: ClientCapabilities;
	send: (client: AgentContext, sessionId: string, updates: SessionUpdate[]) => Promise<void>;
	log: (line: string) => void;
}

/**
 * A dialog of the run, put to the editor: confirm/select as `session/request_permission` (the
 * `tool_call` it is about sent first, same toolCallId), input/editor as a form elicitation where
 * the editor offers one, else dismissed and said so. The choice is the approval's answer; the
 * approval stays an ordinary one, so whoever answers first wins (409 here means someone did).
 */
export async function ask({ gateway, client, sessionId, turn, approval, capabilities, send, log }: Ask): Promise<void> {
	const asking = new AbortController();
	turn.asking.set(approval.id, asking);
	// The tool the dialog is about: the newest one still open, else one made for the dialog.
	let toolCallId = [...turn.state]
		.reverse()
		.find(([, tool]) => tool.status === "pending" || tool.status === "in_progress")?.[0];
	const standalone = !toolCallId;
	let summary = "Answered elsewhere";
	try {
		if (!toolCallId) {
			toolCallId = `approval_${approval.id}`;
			const [next, updates] = announce(turn.state, toolCallId, "dialog", {});
			turn.state = next;
			await send(
				client,
				sessionId,
				updates.map((u) => ({ ...u, title: approval.title }) as SessionUpdate),
			);
		}
		await send(client, sessionId, []); // everything before, the tool_call included, is out first
		// A policy (a remembered "always", the operator's rules) may have answered it already: then nobody is asked.
		const path = { id: sessionId, approvalId: approval.id };
		if (asking.signal.aborted) return;
		if ((await gateway.request("GET", "/v1/sessions/{id}/approvals/{approvalId}", { path })).status !== "pending")
			return;
		const tool = turn.state.get(toolCallId);
		let answer: Answer;
		if (approval.method === "confirm" || approval.method === "select") {
			const choices = permissionChoices(approval);
			const outcome = await client
				.request(
					"session/request_permission",
					{
						sessionId,
						toolCall: { toolCallId, title: permissionTitle(approval), kind: tool?.kind ?? "other", status: "pending" },
						options: choices.map((c) => c.option),
					},
					{ cancellationSignal: asking.signal, stopWaitingOnCancel: true },
				)
				.then((r) => r.outcome)
				.catch(() => ({ outcome: "cancelled" as const }));
			if (asking.signal.aborted) return; // answered elsewhere, or the turn ended
			answer = answerFor(approval, choices, outcome);
		} else if (capabilities.elicitation?.form) {
			const response = await client
				.request(
					"elicitation/create",
					{
						mode: "form",
						sessionId,
						toolCallId,
						message: approval.title,
						requestedSchema: elicitationSchema(approval),
					},
					{ cancellationSignal: asking.signal, stopWaitingOnCancel: true },
				)
				.catch(() => ({ action: "cancel" as const }));
			if (asking.signal.aborted) return;
			answer = answerForElicitation(response);
		} else {
			// ACP permissions carry no text and this editor offers no form: dismissed, and said so.
			answer = { cancelled: true };
			await send(client, sessionId, [
				{
					sessionUpdate: "agent_message_chunk",
					content: {
						type: "text",
						text: `\n[The gateway asked for text ("${approval.title}"), which this editor cannot answer: dismissed. Such dialogs can be answered in the gateway's console or approvals inbox.]\n`,
					},
				},
			]);
		}
		summary = describe(answer);
		await gateway.approvals.answer({ id: approval.id, sessionId }, answer).catch((error) => {
			// 409: someone answered first (inbox, console, another editor); 410: it is gone. Their outcome stands.
			if (error instanceof GatewayError && (error.status === 409 || error.status === 410))
				log(`pi-gateway acp: approval ${approval.id} was settled elsewhere (${error.code})`);
			else log(`pi-gateway acp: answering approval ${approval.id}: ${(error as Error).message}`);
		});
	} catch (error) {
		log(`pi-gateway acp: approval ${approval.id}: ${(error as Error).message}`);
		await gateway.approvals.answer({ id: approval.id, sessionId }, denial(approval)).catch(() => {});
	} finally {
		turn.asking.delete(approval.id);
		if (standalone && toolCallId) {
			// A dialog about no tool (an extension command's) is a tool call of its own: it ends with its answer.
			const [next, updates] = mapEvent(turn.state, {
				type: "tool_execution_end",
				toolCallId,
				toolName: "dialog",
				result: { content: [{ type: "text", text: summary }] },
				isError: false,
			});
			turn.state = next;
			void send(client, sessionId, updates);
		}
	}
}

function describe(answer: Answer): string {
	if ("cancelled" in answer) return "Dismissed";
	if ("confirmed" in answer) return answer.confirmed ? "Allowed" : "Rejected";
	return answer.value;
}
