/** The relay for a sandboxed pi's model calls (keys outside the sandbox, usage counted): its one door. */

export { attachRelay, moveRelay } from "./attach.ts";
export { placeholderPrefix, type RelayPlan, relayPlan } from "./credentials.ts";
export { closeEgressProxy, type EgressDenial, egressDenialReasons, openEgressProxy } from "./egress-proxy.ts";
export type { RelaySink } from "./metering.ts";
export {
	operatorAgentDir,
	proxyPort,
	relayPort,
	relaySocket,
	type SandboxRelay,
	sandboxRelay,
} from "./sandbox-relay.ts";
export { closeRelay, openRelay } from "./server.ts";
export { SessionAllowHosts, sessionAllowHosts } from "./session-egress.ts";
