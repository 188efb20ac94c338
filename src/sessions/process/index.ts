/** A session's pi process: how it is spawned, its sandbox and view of the host, its area and folder. The room's one door. */

export { areaOf } from "./areas.ts";
export {
	confinedByConfig,
	holdingArgs,
	resolveSandbox,
	type SandboxStatus,
	sandboxFix,
	sandboxUnavailable,
	secretFiles,
} from "./sandbox.ts";
export { sandboxLogFields, startSandbox } from "./sandbox-start.ts";
export { shownBySystem, systemView, viewEnd } from "./sandbox-view.ts";
export { CreateSessionBody, gatesSnapshots, piPackageDir } from "./spawn.ts";
