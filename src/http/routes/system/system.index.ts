import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Cluster } from "../../../cluster/cluster.ts";
import { infoLimitKeys, pickLimits } from "../../../config/limits.ts";
import { piPackageDir, resolveSandbox, sandboxFix, sandboxUnavailable } from "../../../sessions/process/index.ts";
import { gatewayVersion } from "../../../shared/package-files.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { healthz, info, readyz } from "./system.routes.ts";

export const piVersion: string = JSON.parse(readFileSync(join(piPackageDir(), "package.json"), "utf8")).version;

export function systemRouter({ registry, config, cluster }: Deps) {
	return createRouter()
		.openapi(healthz, (c) => c.json({ status: "ok" as const }, 200))
		.openapi(readyz, async (c) => {
			if (registry.closing) throw new ApiError(503, "shutting_down", "The gateway is shutting down");
			const sandbox = resolveSandbox(config);
			if (sandbox.state === "unavailable") throw sandboxUnavailable(sandbox.reason);
			// Listening comes a moment before joining: until then every /v1 request is refused (cluster-routing.ts), so not ready.
			if (cluster && !cluster()) throw new ApiError(503, "database_unavailable", "This node is joining its cluster");
			const unavailable = await cluster?.()?.check();
			if (unavailable)
				throw new ApiError(503, "database_unavailable", `New sessions are refused: ${unavailable}; live ones go on`);
			const { writable, error, writeErrors, recreatedAt } = registry.storeHealth();
			if (!writable) {
				throw new ApiError(
					503,
					"insufficient_storage",
					`The session registry cannot be written (${error}): new sessions get 507, live ones go on`,
				);
			}
			return c.json({ status: "ready" as const, registry: { writable, writeErrors, recreatedAt } }, 200);
		})
		.openapi(info, (c) =>
			c.json(
				{
					name: "pi-gateway" as const,
					version: gatewayVersion,
					// The pi --pi-command runs, when it is a pi package (an older one among them).
					piVersion: registry.piPackage?.version ?? piVersion,
					node: process.version,
					demo: config.demo,
					extensions: [...config.extensions.keys()],
					limits: pickLimits(config, infoLimitKeys),
					sessions: registry.size,
					sandbox: sandboxInfo(config),
					...clusterInfo(cluster?.()),
				},
				200,
			),
		);
}

function sandboxInfo(config: Deps["config"]) {
	const { state, reason } = resolveSandbox(config);
	return { state, ...(reason && { reason }), ...(state === "unavailable" && { fix: sandboxFix }) };
}

function clusterInfo(cluster: Cluster | undefined) {
	if (!cluster) return {};
	return { cluster: { node: cluster.node, nodes: [...cluster.nodes] } };
}
