import { createRoute, z } from "@hono/zod-openapi";
import { NodeRow } from "../../../cluster/membership.ts";
import { json, problems } from "../../transport/openapi.ts";

export const healthz = createRoute({
	operationId: "system.health",
	method: "get",
	path: "/healthz",
	tags: ["system"],
	summary: "Liveness: the process answers",
	description:
		"Public, for process supervisors and load balancers: 200 as long as the process answers HTTP. Says nothing about pi or the store (`/readyz` does).",
	security: [],
	responses: {
		200: json(
			z
				.object({ status: z.literal("ok").describe("Always `ok`") })
				.openapi({ description: "The process is alive", example: { status: "ok" } }),
			"Alive",
		),
	},
});

export const readyz = createRoute({
	operationId: "system.ready",
	method: "get",
	path: "/readyz",
	tags: ["system"],
	summary:
		"Readiness: accepting new sessions (503 while shutting down, while the session registry cannot be written, while the sandbox is unavailable, or in cluster mode until the node joined its cluster and while the database is out of reach)",
	description:
		"Public, for load balancers: 200 while this node takes new sessions; 503 problem+json (with `Retry-After` while draining) when it does not, so traffic goes elsewhere while the running sessions go on.",
	security: [],
	responses: {
		200: json(
			z
				.object({
					status: z.literal("ready").describe("Always `ready`"),
					registry: z
						.object({
							writable: z.boolean().describe("The session registry (gateway.db) can be written"),
							writeErrors: z.number().int().openapi({ description: "Failed registry writes since start" }),
							recreatedAt: z.string().optional().openapi({
								format: "date-time",
								description: "When gateway.db, deleted while running, was last recreated from memory",
							}),
						})
						.optional()
						.describe("The session registry's health (a single gateway; absent in cluster mode)"),
				})
				.openapi({
					description: "This node takes new sessions",
					example: { status: "ready", registry: { writable: true, writeErrors: 0 } },
				}),
			"Ready",
		),
		...problems(503),
	},
});

export const Info = z
	.object({
		name: z.literal("pi-gateway").describe("Always `pi-gateway`"),
		version: z.string().describe("The gateway's version"),
		piVersion: z.string().describe("The version of pi it runs"),
		node: z.string().describe("The Node.js version it runs on"),
		demo: z
			.boolean()
			.describe("The built-in offline demo model is in use (--demo; on when neither --provider nor --model is given)"),
		extensions: z.array(z.string()).openapi({ description: "Names sessions may pass in `extensions`" }),
		limits: z
			.record(z.string(), z.number())
			.describe("The gateway's numeric limits by setting name (sessions, processes, timeouts in ms, sizes in bytes)"),
		sessions: z.number().int().openapi({ description: "Sessions this node holds (in cluster mode: owns)" }),
		sandbox: z
			.object({
				state: z
					.enum(["sandboxed", "unconfined", "unavailable"])
					.describe(
						"`sandboxed`: every pi and its tools run in bubblewrap. `unconfined`: the operator started with --sandbox off (tools run unconfined as the gateway's user). `unavailable`: bubblewrap is missing or does not hold here, so no session starts (503 sandbox_unavailable) until `fix` is done",
					),
				reason: z.string().optional().describe("Why it is not on"),
				fix: z.string().optional().describe("What the operator does about an unavailable sandbox"),
			})
			.describe("Whether agents run confined (docs/security.md)"),
		cluster: z
			.object({
				node: z.string().openapi({ description: "This node's id" }),
				nodes: z.array(NodeRow).describe("Every node on the database, this one included"),
			})
			.optional()
			.openapi({
				description:
					"Cluster mode (--database-url): the nodes on the same database, as this node last read them (at each renewal of its lease, every third of --lease-ttl-ms)",
			}),
	})
	.openapi("Info", {
		description: "About this gateway",
		example: {
			name: "pi-gateway",
			version: "0.3.0",
			piVersion: "1.6.0",
			node: "v22.19.0",
			demo: true,
			extensions: [],
			limits: { maxSessions: 100, commandTimeoutMs: 60000 },
			sessions: 1,
			sandbox: { state: "sandboxed" },
		},
	});

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
