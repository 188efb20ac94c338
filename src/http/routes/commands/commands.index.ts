import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import { lacksCommand } from "../../../pi/dialect.ts";
import { unwrap } from "../../../sessions/session/index.ts";
import { streamOwnEvents, wantsStream } from "../../streams/command-stream.ts";
import { sseOptions } from "../../streams/options.ts";
import { resumePosition, resumeStream } from "../../streams/resume.ts";
import { streamedCommandDescription, streamRoute } from "../../streams/stream-routes.ts";
import { commandErrors, createRouter, json, jsonBody } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import type { Deps } from "../deps.ts";
import { type CommandSpec, commandSpecs, fieldsSchema } from "./commands.table.ts";

function routeOf(spec: CommandSpec): RouteConfig {
	const fields = fieldsSchema(spec);
	const request: RouteConfig["request"] = { params: SessionParams };
	if (spec.fields === "body") request.body = jsonBody(fields);
	if (spec.fields === "query") request.query = fields;
	const ok: RouteConfig["responses"] =
		spec.data === null
			? { 204: { description: "pi accepted the command" } }
			: { 200: json(spec.data, "pi's answer (its `data`)") };
	return createRoute({
		operationId: spec.operationId,
		// Which pi command this operation sends: what the "every command has an operation" test checks.
		"x-pi-command": spec.type,
		method: spec.method,
		path: `/v1/sessions/{id}${spec.path}`,
		tags: ["commands"],
		summary: spec.summary,
		description: spec.streams
			? `Sends pi's \`${spec.type}\` command. To stream its \`${spec.streams}\` events, use \`POST …${spec.path}/stream\` (its own operation); this path answers \`Accept: text/event-stream\` the same way.`
			: `Sends pi's \`${spec.type}\` command.`,
		request,
		// A command an older pi lacks answers 501 under it (pi/dialect.ts).
		responses: { ...ok, ...commandErrors(...(legacyLacks(spec.type) ? [501] : [])) },
	});
}

const legacyLacks = (type: string) => lacksCommand("legacy", type);

/** `POST …/bash/stream`: the streamed variant as an operation of its own (see streams.routes.ts). */
function streamRouteOf(spec: CommandSpec & { streams: string }) {
	return streamRoute({
		operationId: `${spec.operationId}Stream`,
		path: spec.path,
		type: spec.type,
		tag: "commands",
		summary: `${spec.summary}, streaming its output`,
		description: streamedCommandDescription(spec.type, spec.streams),
	});
}

export function commandsRouter({ registry, config }: Deps) {
	const sse = sseOptions(config);
	const router = createRouter();
	for (const spec of commandSpecs) {
		router.openapi(routeOf(spec), async (c) => {
			const session = registry.get(c.req.param("id") as string);
			const raw =
				spec.fields === "body"
					? c.req.valid("json" as never)
					: spec.fields === "query"
						? c.req.valid("query" as never)
						: {};
			// Paths and image sizes are checked by the session's guard, for typed routes and /rpc alike.
			const fields = raw as Record<string, unknown>;
			// A retried POST of the streamed command (Last-Event-ID) resumes its stream: nothing reaches pi.
			const resumeAt = spec.streams ? resumePosition(c) : undefined;
			if (resumeAt !== undefined) return resumeStream(c, sse, session, resumeAt);
			if (spec.streams && wantsStream(c)) return streamOwnEvents(c, sse, session, spec.type, fields, spec.streams);
			const data = unwrap(await session.request({ type: spec.type, ...fields }));
			if (spec.data === null) return c.body(null, 204);
			return c.json(((spec.answer ? spec.answer(data) : data) ?? null) as never, 200);
		});
		const eventType = spec.streams;
		if (eventType === undefined) continue;
		router.openapi(streamRouteOf({ ...spec, streams: eventType }), (c) => {
			const session = registry.get(c.req.param("id"));
			const resumeAt = resumePosition(c);
			if (resumeAt !== undefined) return resumeStream(c, sse, session, resumeAt);
			return streamOwnEvents(c, sse, session, spec.type, c.req.valid("json") as Record<string, unknown>, eventType);
		});
	}
	return router;
}
