import { join } from "node:path";

/**
 * vitest globalSetup: one Node compile cache for the suite's own node processes (the workers and
 * the gateways tests start as processes, which inherit this environment), so each compiles the
 * gateway's modules from its bytecode instead of from source. Without it every gateway process
 * keeps its cache in its fresh data dir (main.ts), cold at every start. In the checkout's
 * node_modules/.cache, not the shared /tmp, where another user could plant bytecode the suite
 * would run. pi children never see it: their environment is an allow-list and each area has its
 * own cache (areas.ts).
 */
export function setup(): void {
	process.env.NODE_COMPILE_CACHE ??= join(import.meta.dirname, "../../node_modules/.cache/pi-gateway-compile-cache");
}
