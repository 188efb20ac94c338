import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { Config } from "../../config/config.ts";
import type { Dialect } from "../../pi/dialect.ts";
import type { UiRequest } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import { trackActivity } from "../events/index.ts";
import { ownFolder } from "../process/session-files.ts";
import type { CreateSessionBody } from "../process/spawn.ts";
import { Session, type SessionInit, type SessionLimits } from "../session/session.ts";
import { guardCommand } from "./guard.ts";

/** Commands that start or join a run: refused while the gateway drains (SIGTERM). */
const runCommands = new Set(["prompt", "steer", "follow_up"]);

/** New work while the gateway stops: 503, retried once it (or another node) is back. */
export const shuttingDown = () =>
	new GatewayError(503, "shutting_down", "The gateway is shutting down; retry after Retry-After seconds", {
		retryAfter: 5,
	});

export const newSessionId = () => `ses_${randomBytes(9).toString("base64url")}`;

/** What a session asks of the registry while it runs: whether the gateway drains, a wake-up. */
export interface SessionHost {
	readonly config: Config;
	readonly logger: Logger;
	readonly dialect: Dialect;
	limits(): SessionLimits;
	closing(): boolean;
	resume(id: string): Promise<unknown>;
	/** Dialogs the gateway answers itself (Session.quietDialog). */
	quietDialog(id: string, request: UiRequest): Promise<unknown> | undefined;
}

/** A Session with the registry's rules on its commands (drain, budget, paths) and its wake-up. */
export function buildSession(
	host: SessionHost,
	id: string,
	options: CreateSessionBody,
	cwd: string,
	extra: Pick<SessionInit, "restored" | "name"> = {},
): Session {
	const { config } = host;
	const session = new Session({
		id,
		name: extra.name ?? options.name,
		cwd,
		persist: options.persist,
		clientTools: options.clientTools?.map((tool) => tool.name),
		limits: host.limits(),
		dialect: host.dialect,
		logger: host.logger,
		restored: extra.restored,
		// Its own folder is the one its file lies in: switch, fork and clone keep to it. Draining, runs
		// in progress settle and no new one starts. The guard is handed the session it guards: no
		// command asks the registry for it again.
		guard: (command, session) => {
			if (host.closing() && runCommands.has(command.type)) throw shuttingDown();
			// A session past its budget calls the model no more (budget.ts: runs, compact): 409 before pi.
			session.budget.assertAvailable(id, command.type);
			return guardCommand(config, command, ownFolder(config, session.piState.sessionFile), session.cwd);
		},
		wake: async (s) => {
			// Without auto-resume the command meets 409 session_stopped.
			if (config.autoResume) await host.resume(s.id);
		},
	});
	session.quietDialog = (request) => host.quietDialog(id, request);
	session.toolCalls.declare(options.clientTools ?? []);
	trackActivity(session, (listener) => session.events.subscribe(listener));
	return session;
}
