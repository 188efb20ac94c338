import type { Session } from "../session/session.ts";
import { closeEgressProxy, openEgressProxy } from "./egress-proxy.ts";
import type { SandboxRelay } from "./sandbox-relay.ts";
import { closeRelay, openRelay } from "./server.ts";

const watched = new WeakSet<Session>();

/**
 * Opens the relay of a pi about to start for `session` (its calls count against the session's
 * budget, and are refused once it is spent) and closes it when that pi exits. An unsandboxed pi
 * has none: its own reports are what the budget counts. With the operator's allow list, its tools'
 * egress proxy opens beside it, each refusal an `egress_denied` event in the session's stream.
 */
export function attachRelay(session: Session, relay: SandboxRelay | undefined): void {
	const { budget } = session;
	budget.relayed = new Set(relay ? [...relay.plan.routes.values()].map((r) => r.provider) : []);
	if (!relay) return;
	openRelay(relay.socket, relay.plan, {
		refusal: (call) => budget.refusal(session.id, call),
		counted: (tokens, costUsd) => budget.countRelayed(tokens, costUsd),
	});
	const { proxy } = relay;
	if (proxy)
		openEgressProxy(proxy.socket, proxy.allow, {
			denied: (denial) => {
				const type = "egress_denied";
				session.events.append(type, JSON.stringify({ type, sessionId: session.id, ...denial }));
			},
		});
	if (watched.has(session)) return;
	watched.add(session);
	session.events.subscribe((event) => {
		if (event.type !== "session_exit") return;
		closeRelay(relay.socket);
		if (proxy) closeEgressProxy(proxy.socket);
	});
}
