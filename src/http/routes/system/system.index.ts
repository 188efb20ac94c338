import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { piPackageDir } from "../../../sessions/spawn.ts";
import type { Deps } from "../../deps.ts";
import { createRouter } from "../../openapi.ts";
import { ApiError } from "../../problem.ts";
import { healthz, info, readyz } from "./system.routes.ts";

const require = createRequire(import.meta.url);
export const gatewayVersion: string = require("../../../../package.json").version;
export const piVersion: string = JSON.parse(readFileSync(join(piPackageDir(), "package.json"), "utf8")).version;

export function systemRouter({ registry, config }: Deps) {
	return createRouter()
		.openapi(healthz, (c) => c.json({ status: "ok" as const }, 200))
		.openapi(readyz, (c) => {
			if (registry.closing) throw new ApiError(503, "shutting_down", "The gateway is shutting down");
			return c.json({ status: "ready" as const }, 200);
		})
		.openapi(info, (c) =>
			c.json(
				{
					name: "pi-gateway" as const,
					version: gatewayVersion,
					piVersion,
					node: process.version,
					demo: config.demo,
					extensions: [...config.extensions.keys()],
					limits: {
						maxSessions: config.maxSessions,
						maxLiveSessions: config.maxLiveSessions,
						idleTimeoutMs: config.idleTimeoutMs,
						warmPool: config.warmPool,
						maxImageBytes: config.maxImageBytes,
						streamTicketTtlMs: config.streamTicketTtlMs,
						maxQueued: config.maxQueued,
						maxSubscribers: config.maxSubscribers,
						maxBodyBytes: config.maxBodyBytes,
						commandTimeoutMs: config.commandTimeoutMs,
						waitTimeoutMs: config.waitTimeoutMs,
						eventLogMaxEvents: config.eventLogMaxEvents,
						eventLogMaxBytes: config.eventLogMaxBytes,
						sseMaxBufferedBytes: config.sseMaxBufferedBytes,
						sseHeartbeatMs: config.sseHeartbeatMs,
						approvalTimeoutMs: config.approvalTimeoutMs,
					},
					sessions: registry.size,
				},
				200,
			),
		);
}
