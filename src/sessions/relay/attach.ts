import type { Session } from "../session/session.ts";
import { closeEgressProxy, openEgressProxy } from "./egress-proxy.ts";
import type { SandboxRelay } from "./sandbox-relay.ts";
import { closeRelay, openRelay } from "./server.ts";

const watched = new WeakSet<Session>();
/** The session each open relay counts for now: the one its pi started for, or the one it was handed to. */
const owners = new WeakMap<SandboxRelay, { session: Session }>();
/** The relay a session's current pi uses: closed when that pi exits. */
const current = new WeakMap<Session, SandboxRelay>();

const relayedBy = (relay: SandboxRelay | undefined) =>
	new Set(relay ? [...relay.plan.routes.values()].map((r) => r.provider) : []);

/**
 * Opens the relay of a pi about to start for `session` (its calls count against the session's
 * budget, and are refused once it is spent) and closes it when that pi exits. An unsandboxed pi
 * has none: its own reports are what the budget counts. With the operator's allow list, its tools'
 * egress proxy opens beside it, each refusal an `egress_denied` event in the session's stream.
 */
export function attachRelay(session: Session, relay: SandboxRelay | undefined): void {
	session.budget.relayed = relayedBy(relay);
	current.delete(session);
	if (!relay) return;
	const owner = { session };
	owners.set(relay, owner);
	openRelay(relay.socket, relay.plan, {
		refusal: (call) => owner.session.budget.refusal(owner.session.id, call),
		counted: (tokens, costUsd) => owner.session.budget.countRelayed(tokens, costUsd),
	});
	const { proxy } = relay;
	if (proxy)
		openEgressProxy(proxy.socket, proxy.allow, {
			denied: (denial) => {
				const type = "egress_denied";
				const { events, id } = owner.session;
				events.append(type, JSON.stringify({ type, sessionId: id, ...denial }));
			},
		});
	closeOnExit(session, relay);
}

/**
 * The relay of a pi handed to another session (a pooled pi that wakes one: registry/pooled-wake.ts):
 * its calls count against `to`'s budget, its refusals are told in `to`'s stream, and it closes when
 * `to`'s pi exits. The sockets stay where the pi's sandbox has them bound.
 */
export function moveRelay(relay: SandboxRelay | undefined, to: Session): void {
	to.budget.relayed = relayedBy(relay);
	current.delete(to);
	const owner = relay && owners.get(relay);
	if (!relay || !owner) return;
	current.delete(owner.session);
	owner.session = to;
	closeOnExit(to, relay);
}

function closeOnExit(session: Session, relay: SandboxRelay): void {
	current.set(session, relay);
	if (watched.has(session)) return;
	watched.add(session);
	session.events.subscribe((event) => {
		if (event.type !== "session_exit") return;
		const open = current.get(session);
		if (!open) return;
		current.delete(session);
		closeRelay(open.socket);
		if (open.proxy) closeEgressProxy(open.proxy.socket);
	});
}
