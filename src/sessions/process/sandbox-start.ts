import type { Logger } from "pino";
import type { Config } from "../../config/config.ts";
import { readableProblem } from "../../config/layout-check.ts";
import { resolveSandbox, type SandboxStatus, sandboxFix } from "./sandbox.ts";
import { readableGuard } from "./sandbox-view.ts";
import { prepareSealedNode, sealedNodeDir } from "./sealed-node.ts";

/**
 * The sandbox as the gateway starts with it (before its token is made: `--sandbox on` without one
 * refuses the start and leaves nothing behind). From here on config.sandbox is "on" or "off"
 * (planSpawn wraps each child when it is "on"), or still "auto" when the sandbox is unavailable:
 * then every create and resume is refused (sandbox.ts confinedByConfig) and nothing is kept warm.
 * What it is is said once, by the caller, in the listening line and the start-up notices.
 */
export function startSandbox(config: Config, log: Logger): SandboxStatus {
	// The operator's read-only extras: one that would show the data dir, a secret or the workspace
	// root refuses the start, naming it (layout-check.ts readableProblem).
	for (const path of config.sandboxReadable) {
		const problem = readableProblem(path, readableGuard(config));
		if (problem) throw new Error(`--sandbox-readable: ${problem.detail}`);
	}
	const sandbox = resolveSandbox(config, true);
	if (sandbox.state !== "unavailable") config.sandbox = sandbox.enabled ? "on" : "off";
	else config.warmPool = 0;
	const unsealed = sandbox.enabled ? prepareSealedNode() : undefined;
	if (unsealed)
		log.warn(
			{ reason: unsealed, folder: sealedNodeDir() },
			"no execute-only copy of node for pi: its tools can take its pipes and memory (docs/security.md)",
		);
	return sandbox;
}

/** The sandbox in the "listening" log line: said once there and in the start-up notice, with the fix. */
export function sandboxLogFields(sandbox: SandboxStatus): Record<string, string> {
	return {
		sandbox: sandbox.state,
		...(sandbox.reason && { sandboxReason: sandbox.reason }),
		...(sandbox.state === "unavailable" && { sandboxFix }),
	};
}
