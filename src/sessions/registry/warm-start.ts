import type { Config } from "../../config/config.ts";
import type { Area } from "../process/areas.ts";
import { agentDir } from "../process/sandbox.ts";
import { type CreateSessionBody, planSpawn } from "../process/spawn.ts";
import { attachRelay } from "../relay/index.ts";
import type { Session } from "../session/session.ts";
import { newSessionId } from "./session-factory.ts";
import { agentDirStamp, type Pooled, removeEmpty } from "./warm-pool.ts";

export const defaultBody: CreateSessionBody = { persist: true };

/**
 * A pool process: a session of `area` started with the default options, not yet in the registry.
 * Its own folders go again when it fails to start; an area itself (--default-cwd root) never does.
 */
export async function startPooled(
	config: Config,
	area: Area,
	build: (id: string, options: CreateSessionBody, cwd: string) => Session,
	spawned: (session: Session) => void,
	again = true,
): Promise<Pooled> {
	const id = newSessionId();
	const plan = planSpawn(config, defaultBody, { id, area, pooled: true });
	const at = plan.args.indexOf("--session-dir");
	const sessionDir = at < 0 ? undefined : plan.args[at + 1];
	const folders = [plan.cwd, ...(sessionDir ? [sessionDir] : [])];
	const own = config.defaultCwd === "own" ? folders : folders.slice(1);
	// Stamped before pi starts, and checked once it is up: a folder that changed while pi read it (an
	// agent of the area dropping an extension then) gives a pi that is not what a cold start is now.
	// Stamped only once it was up, such a pi was handed out without the extension a cold start
	// loads. pi itself writes there at its first start only (auth.json, models-store.json): that
	// start is made once more; a folder that changes again fails the fill (the next take retries).
	const dir = agentDir(plan.env);
	const stamp = agentDirStamp(dir);
	// A folder too big to stamp: nothing pooled could be handed out, so none is started (each would
	// be a pi start for nothing; creates in that area start cold).
	if (stamp === undefined) {
		removeEmpty(own);
		throw new Error(`pi's agent folder ${dir} holds too many entries to pool a pi for it`);
	}
	const session = build(id, defaultBody, plan.cwd);
	spawned(session);
	try {
		attachRelay(session, plan.sandboxed?.relay);
		await session.start(plan);
	} catch (error) {
		removeEmpty(own);
		throw error;
	}
	if (agentDirStamp(dir) !== stamp) {
		session.kill("SIGKILL", true);
		await session.stop("shutdown");
		removeEmpty(own);
		if (again) return startPooled(config, area, build, spawned, false);
		throw new Error(`pi's agent folder ${dir} changed while a pooled pi started`);
	}
	const relay = plan.sandboxed?.relay;
	return {
		session,
		folders: own,
		agentDir: { path: dir, stamp },
		refresh: relay?.refresh,
		relay,
		sessionDir,
	};
}
