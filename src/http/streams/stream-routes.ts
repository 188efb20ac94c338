import { createRoute, z } from "@hono/zod-openapi";
import { type CommandType, commandFields } from "../../pi/protocol.ts";
import { commandErrors, jsonBody } from "../transport/openapi.ts";
import { SessionParams } from "../transport/params.ts";
import { EventStreamDoc, eventStreamFraming } from "./event-schemas.ts";
import { ResumeHeader, resumeAfter } from "./resume.ts";

/** The shared pieces of every streamed operation (runs and commands). */

export const SseHeaders = {
	"Cache-Control": { description: "`no-cache, no-transform`", schema: { type: "string" as const } },
	"X-Accel-Buffering": {
		description: "`no`: tells nginx-style proxies not to buffer the stream",
		schema: { type: "string" as const },
	},
};

export function streamedCommandDescription(type: string, eventType: string): string {
	return `Sends pi's \`${type}\` command and answers with a stream: \`stream_open\`, then each \`${eventType}\` event of this command as pi prints it, then pi's \`response\` (the same data as the JSON answer of the plain operation), then the stream ends. A command that fails at once (queue full, pi gone) is still an HTTP error.`;
}

export function sseResponse(description: string) {
	return {
		description: `${description} ${eventStreamFraming}`,
		headers: SseHeaders,
		content: { "text/event-stream": { schema: EventStreamDoc } },
	};
}

export function streamRoute(options: {
	operationId: string;
	path: string;
	type: CommandType;
	tag: "runs" | "commands";
	summary: string;
	description: string;
}) {
	return createRoute({
		operationId: options.operationId,
		"x-pi-command": options.type,
		method: "post",
		path: `/v1/sessions/{id}${options.path}/stream`,
		tags: [options.tag],
		summary: options.summary,
		description: options.description,
		request: {
			params: SessionParams,
			query: z.object({ after: resumeAfter }),
			headers: ResumeHeader,
			body: jsonBody(commandFields[options.type]),
		},
		responses: {
			200: sseResponse("The events, as they happen."),
			204: {
				description:
					"A resume (`Last-Event-ID`) whose run had already ended with that event: nothing is left, stop retrying",
			},
			...commandErrors(),
		},
	});
}
