import type { SessionUpdate } from "@agentclientprotocol/sdk";
import { announce, emptyTurn, mapEvent, type TurnState } from "./mapping.ts";

const record = (value: unknown): Record<string, unknown> =>
	value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/**
 * The conversation so far (GET …/messages) → the updates that show it again in an editor
 * (session/load): user text as user_message_chunk, the assistant's text and thinking as chunks,
 * its tool calls with their results as completed (or failed) tool calls.
 */
export function history(messages: unknown[]): SessionUpdate[] {
	const updates: SessionUpdate[] = [];
	let state: TurnState = emptyTurn;
	for (const raw of messages) {
		const message = record(raw);
		const content = Array.isArray(message.content) ? message.content.map(record) : [];
		if (message.role === "user") {
			const text = typeof message.content === "string" ? message.content : undefined;
			if (text) updates.push({ sessionUpdate: "user_message_chunk", content: { type: "text", text } });
			for (const part of content) {
				if (part.type === "text" && str(part.text))
					updates.push({
						sessionUpdate: "user_message_chunk",
						content: { type: "text", text: str(part.text) as string },
					});
				else if (part.type === "image" && str(part.data) && str(part.mimeType))
					updates.push({
						sessionUpdate: "user_message_chunk",
						content: { type: "image", data: str(part.data) as string, mimeType: str(part.mimeType) as string },
					});
			}
		} else if (message.role === "assistant") {
			for (const part of content) {
				if (part.type === "text" && str(part.text))
					updates.push({
						sessionUpdate: "agent_message_chunk",
						content: { type: "text", text: str(part.text) as string },
					});
				else if (part.type === "thinking" && str(part.thinking))
					updates.push({
						sessionUpdate: "agent_thought_chunk",
						content: { type: "text", text: str(part.thinking) as string },
					});
				else if (part.type === "toolCall" && str(part.id)) {
					const [next, announced] = announce(
						state,
						str(part.id) as string,
						str(part.name) ?? "tool",
						record(part.arguments),
					);
					state = next;
					updates.push(...announced);
				}
			}
		} else if (message.role === "toolResult" && str(message.toolCallId)) {
			const [next, ended] = mapEvent(state, {
				type: "tool_execution_end",
				toolCallId: message.toolCallId,
				toolName: message.toolName,
				result: { content: message.content },
				isError: message.isError,
			});
			state = next;
			updates.push(...ended);
		}
	}
	return updates;
}
