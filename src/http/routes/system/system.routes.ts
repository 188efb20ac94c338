import { createRoute, z } from "@hono/zod-openapi";
import { NodeRow } from "../../../cluster/membership.ts";
import { json, problems } from "../../transport/openapi.ts";

export const healthz = createRoute({
	operationId: "system.health",
	method: "get",
	path: "/healthz",
	tags: ["system"],
	summary: "Liveness: the process answers",
	security: [],
	responses: { 200: json(z.object({ status: z.literal("ok") }), "Alive") },
});

export const readyz = createRoute({
	operationId: "system.ready",
	method: "get",
	path: "/readyz",
	tags: ["system"],
	summary:
		"Readiness: accepting new sessions (503 while shutting down, while the session registry cannot be written, or in cluster mode while the database is out of reach)",
	security: [],
	responses: {
		200: json(
			z.object({
				status: z.literal("ready"),
				registry: z
					.object({
						writable: z.boolean(),
						writeErrors: z.number().int().openapi({ description: "Failed registry writes since start" }),
						recreatedAt: z.string().optional().openapi({
							format: "date-time",
							description: "When gateway.db, deleted while running, was last recreated from memory",
						}),
					})
					.optional(),
			}),
			"Ready",
		),
		...problems(503),
	},
});

export const Info = z
	.object({
		name: z.literal("pi-gateway"),
		version: z.string(),
		piVersion: z.string(),
		node: z.string(),
		demo: z.boolean(),
		extensions: z.array(z.string()).openapi({ description: "Names sessions may pass in `extensions`" }),
		limits: z.record(z.string(), z.number()),
		sessions: z.number().int().openapi({ description: "Sessions this node holds (in cluster mode: owns)" }),
		cluster: z
			.object({
				node: z.string().openapi({ description: "This node's id" }),
				nodes: z.array(NodeRow),
			})
			.optional()
			.openapi({
				description:
					"Cluster mode (--database-url): the nodes on the same database, as this node last read them (at each renewal of its lease, every third of --lease-ttl-ms)",
			}),
	})
	.openapi("Info");

export const info = createRoute({
	operationId: "system.info",
	method: "get",
	path: "/v1/info",
	tags: ["system"],
	summary: "Versions, limits and the extension allow-list",
	responses: { 200: json(Info, "About this gateway"), ...problems(401) },
});

export const metrics = createRoute({
	operationId: "system.metrics",
	method: "get",
	path: "/metrics",
	tags: ["system"],
	summary: "Prometheus metrics: sessions, pi processes, commands, events, approvals, HTTP, process",
	description:
		"The Prometheus text exposition format (`text/plain; version=0.0.4`). Series are prefixed `pi_gateway_`, besides prom-client's standard `process_*` and `nodejs_*`.",
	responses: {
		200: {
			description: "The metrics",
			content: {
				"text/plain": {
					schema: z.string().openapi({ example: 'pi_gateway_sessions{status="idle"} 1' }),
				},
			},
		},
		...problems(401),
	},
});
