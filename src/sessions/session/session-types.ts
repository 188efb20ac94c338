import type { RpcSessionState } from "@earendil-works/pi-coding-agent";
import { z } from "@hono/zod-openapi";
import type { Logger } from "pino";
import type { SessionLimits } from "../../config/limits.ts";
import type { Dialect } from "../../pi/dialect.ts";
import type { PiCommand } from "../../pi/protocol.ts";

/** The shapes a session is built from and reports: its status, limits, start plan and pi's state. */

export const SessionStatus = z
	.enum(["starting", "idle", "running", "waiting", "stopped", "exited", "crashed"])
	.openapi("SessionStatus", {
		description:
			"`stopped`: no pi process (hibernated, or restored after a gateway restart); the next command or POST …/resume starts pi again on the same session file",
	});
export type SessionStatus = z.infer<typeof SessionStatus>;

// One list, derived from the config schema (src/config/limits.ts); re-exported where sessions look for it.
export type { SessionLimits };

/** How to start one pi process for this session (a resume starts a new one with other args). */
export interface SpawnCommand {
	command: string;
	args: string[];
	env: NodeJS.ProcessEnv;
	/** The command bwrap runs, when `command` is bwrap. */
	sandboxed?: { command: string };
	/** Sandboxed: the folder bwrap binds from descriptor 3, opened and checked at the spawn. */
	bindFolder?: { path: string; root: string };
}

/** Why the gateway stopped pi: `stopped` (DELETE), `idle`/`lru` (hibernation), `shutdown`. */
export type StopReason = "stopped" | "idle" | "lru" | "shutdown";

export interface SessionInit<Self = unknown> {
	id: string;
	name?: string;
	cwd: string;
	persist: boolean;
	limits: SessionLimits;
	logger: Logger;
	/** The protocol pi speaks, when known before it starts (a legacy pi is also detected in band). */
	dialect?: Dialect;
	/** A session read back from the store: it starts `stopped`, and its log continues after lastSeq. */
	restored?: {
		createdAt: Date;
		lastActivityAt: number;
		lastSeq: number;
		piState: PiState;
		/** Its previous gateway (or node) stopped uncleanly: what its log begins with (see Session). */
		unclean?: UncleanStop;
	};
	/** The names of the session's client tools (client-tools.ts): their calls become tool calls. */
	clientTools?: readonly string[];
	/** Checks (and rewrites) every command before anything else happens to it: limits, paths; handed the session itself. */
	guard?(command: PiCommand, session: Self): PiCommand;
	/** Starts pi again for a `stopped` session before a command (the registry minds the process cap). */
	wake?(session: Self): Promise<void>;
}

/**
 * A session whose previous gateway (or cluster node) died without writing its last state: the
 * numbers between its stored last seq and the margin it skips are unknown, and when it had a pi
 * process, that process (and the run it was in) died with the gateway.
 */
export interface UncleanStop {
	/** Why, in words, for the `run_lost` event (e.g. "the gateway stopped uncleanly"). */
	why: string;
	/** The session had a pi process when its state was last written. */
	live: boolean;
	/** The run in progress then, if any. */
	runId?: string;
}

/** What pi last told us about itself (get_state), kept for the session representation. */
export interface PiState {
	sessionId?: string;
	sessionFile?: string;
	sessionName?: string;
	model?: { provider: string; id: string };
	thinkingLevel?: string;
	/** The gateway saw sessionFile on disk (pi writes it lazily): from then on its absence is a loss. */
	fileSeen?: boolean;
}

/** What is kept of a get_state answer; `fileSeen` carries over while the session file stays the same. */
export function piStateOf(data: unknown, previous: PiState): PiState {
	// pi's own get_state type; partial, since the line came over a pipe.
	const state = (data ?? {}) as Partial<RpcSessionState>;
	return {
		sessionId: state.sessionId,
		sessionFile: state.sessionFile,
		sessionName: state.sessionName,
		model: state.model ? { provider: state.model.provider, id: state.model.id } : undefined,
		thinkingLevel: state.thinkingLevel,
		fileSeen: state.sessionFile === previous.sessionFile ? previous.fileSeen : undefined,
	};
}
