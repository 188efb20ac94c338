import { createRoute, z } from "@hono/zod-openapi";
import { RawCommand } from "../../../pi/protocol.ts";
import { unwrap } from "../../../sessions/session/index.ts";
import { commandErrors, createRouter, json, jsonBody } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import type { Deps } from "../deps.ts";

export const rawCommand = createRoute({
	operationId: "sessions.rpc",
	method: "post",
	path: "/v1/sessions/{id}/rpc",
	tags: ["commands"],
	summary: "Send a raw pi RPC command (for commands newer than this gateway)",
	description:
		"Known command types are validated field by field; unknown ones must be objects with a snake_case `type`. The gateway assigns the `id`. Queued unless the type is a read (`get_*`) or a control (`abort*`, `clear_queue`).",
	request: {
		params: SessionParams,
		body: jsonBody(RawCommand, { type: "get_state" }),
	},
	responses: {
		200: json(
			z.unknown().openapi({
				description: "pi's `data` for the command",
				example: { model: { id: "demo", provider: "pi-gateway-demo" }, thinkingLevel: "off", isStreaming: false },
			}),
			"pi's answer",
		),
		...commandErrors(501),
	},
});

export function rpcRouter({ registry }: Deps) {
	return createRouter().openapi(rawCommand, async (c) => {
		const session = registry.get(c.req.valid("param").id);
		const data = unwrap(await session.request(c.req.valid("json")));
		return c.json((data ?? null) as never, 200);
	});
}
