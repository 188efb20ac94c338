import { createRoute, z } from "@hono/zod-openapi";
import { Scope } from "../../auth/principals.ts";
import { json, problems } from "../../transport/openapi.ts";

export const Whoami = z
	.object({
		principal: z
			.string()
			.openapi({ description: "The credential's principal: `admin` for the token, else the key's or JWT's name" }),
		scopes: z.array(Scope).openapi({
			description: "What it may do; `admin` holds every other scope. A client shows only what these allow",
		}),
		anonymous: z.boolean().openapi({ description: "--no-auth: nobody is authenticated, everyone is admin" }),
	})
	.openapi("Whoami", {
		description: "Who the caller's credential is and what it may do",
		example: { principal: "alice", scopes: ["sessions:read", "sessions:write"], anonymous: false },
	});

export const whoami = createRoute({
	operationId: "system.whoami",
	method: "get",
	path: "/v1/whoami",
	tags: ["system"],
	summary: "Who this credential is and which scopes it holds (any credential may ask)",
	description:
		"For clients such as the console: offer only the operations the caller's scopes allow. Needs no particular scope; a stream ticket is not a credential here.",
	// Any credential: declareScopes keeps an explicit empty scope list.
	security: [{ bearer: [] }],
	responses: { 200: json(Whoami, "The caller"), ...problems(401) },
});
