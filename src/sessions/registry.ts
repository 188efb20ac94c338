import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import { ApiError } from "../http/problem.ts";
import type { Approval } from "./approvals.ts";
import type { LoggedEvent } from "./event-log.ts";
import { Session, type SessionLimits } from "./session.ts";
import { type CreateSessionBody, planSpawn } from "./spawn.ts";

export type HubListener = (sessionId: string, event: LoggedEvent) => void;

/** All live sessions, and the cross-session views: approval inbox and the all-sessions event hub. */
export class SessionRegistry {
	readonly #config: Config;
	readonly #logger: Logger;
	readonly #sessions = new Map<string, Session>();
	readonly #hub = new Set<HubListener>();
	#closing = false;

	constructor(config: Config, logger: Logger) {
		this.#config = config;
		this.#logger = logger;
		mkdirSync(config.dataDir, { recursive: true });
	}

	get closing(): boolean {
		return this.#closing;
	}

	get size(): number {
		return this.#sessions.size;
	}

	limits(): SessionLimits {
		const c = this.#config;
		return {
			maxQueued: c.maxQueued,
			commandTimeoutMs: c.commandTimeoutMs,
			startupTimeoutMs: c.startupTimeoutMs,
			shutdownGraceMs: c.shutdownGraceMs,
			eventLogMaxEvents: c.eventLogMaxEvents,
			eventLogMaxBytes: c.eventLogMaxBytes,
			maxLineChars: c.maxLineChars,
			stderrTailBytes: c.stderrTailBytes,
			approvalTimeoutMs: c.approvalTimeoutMs,
			maxNotifications: c.maxNotifications,
		};
	}

	async create(body: CreateSessionBody): Promise<Session> {
		if (this.#closing) throw new ApiError(503, "shutting_down", "The gateway is shutting down");
		const live = [...this.#sessions.values()].filter((s) => s.isAlive).length;
		if (live >= this.#config.maxSessions) {
			throw new ApiError(429, "too_many_sessions", `At most ${this.#config.maxSessions} live sessions`);
		}
		const plan = planSpawn(this.#config, body);
		const id = `ses_${randomBytes(9).toString("base64url")}`;
		const session = new Session({
			id,
			name: body.name,
			cwd: plan.cwd,
			persist: body.persist,
			command: plan.command,
			args: plan.args,
			env: plan.env,
			limits: this.limits(),
			logger: this.#logger,
		});
		// Registered before start so that shutdown() also stops a child that is still starting.
		this.#sessions.set(id, session);
		session.log.subscribe((event) => {
			for (const listener of this.#hub) listener(id, event);
		});
		try {
			await session.start();
		} catch (error) {
			this.#sessions.delete(id);
			throw error;
		}
		return session;
	}

	get(id: string): Session {
		const session = this.#sessions.get(id);
		if (!session) throw new ApiError(404, "session_not_found", `No session ${id}`);
		return session;
	}

	list(): Session[] {
		return [...this.#sessions.values()];
	}

	async delete(id: string): Promise<void> {
		const session = this.get(id);
		await session.stop();
		this.#sessions.delete(id);
	}

	subscribeAll(listener: HubListener): () => void {
		this.#hub.add(listener);
		return () => this.#hub.delete(listener);
	}

	/** Every session's approvals (each session's oldest first; pageOf orders them across sessions). */
	approvals(status?: Approval["status"]): Approval[] {
		return this.list().flatMap((s) => s.approvals.list(status));
	}

	/** Stops every child (stdin end → SIGTERM → SIGKILL) and refuses new sessions. */
	async shutdown(): Promise<void> {
		this.#closing = true;
		await Promise.all(this.list().map((s) => s.stop()));
	}
}
