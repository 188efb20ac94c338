import { existsSync, opendirSync, readdirSync, renameSync, rmdirSync } from "node:fs";
import { basename, join } from "node:path";
import type { Config } from "../../config/config.ts";
import { ThinkingLevel } from "../../pi/protocol.ts";
import { readAgentFile } from "../../shared/paths.ts";
import { type Area, areaOf } from "../process/areas.ts";
import { ownFolder } from "../process/session-files.ts";
import type { CreateSessionBody } from "../process/spawn.ts";
import { moveRelay } from "../relay/index.ts";
import type { Session } from "../session/session.ts";
import { isPlain } from "./pooled-model.ts";
import type { Pooled } from "./warm-pool.ts";

/**
 * Waking a hibernated session on a warm pool's pi instead of starting one: its session files are
 * moved into the pooled pi's own folder (the one its sandbox shows), pi opens the file there
 * (switch_session: pi's runtime made again on it, ≈ 60 ms here, against a cold start's 0.5–1 s)
 * and the process, its relay included, is handed to the session.
 *
 * Only where that pi is what a cold start of the session would be:
 * - the session works in its area's folder itself (`--default-cwd root`, the layout
 *   `--workspace-root` gives): a pooled pi's sandbox shows its area's folder and no other, and one
 *   started for `--default-cwd own` shows a new folder of its own, never the session's;
 * - the session was created with nothing a pooled pi lacks (no extensions, tools, prompts, cwd,
 *   readable extras or budget: only name, model and thinking level, which a restart takes from the
 *   file anyway);
 * - its file is in a folder of its own, whose header names that folder as its cwd, and that folder
 *   holds a handful of entries (the agent can write there: a folder of thousands would cost the
 *   event loop, so it starts cold);
 * - the relay would use the same principal's keys (key-owner.ts): the session works in its
 *   owner's own area, or in the whole root (where no principal's own keys are used).
 * Anything else, or any step that fails, starts cold, as before.
 */

/** Entries of the session's folder moved at most; past it the session starts cold. */
const maxEntries = 64;

/** The area whose pool may wake `session` (owned by `owner`), or undefined when a pooled pi is not what a cold start would be. */
export function wakeArea(
	config: Config,
	session: Session,
	options: CreateSessionBody,
	owner: string | undefined,
): Area | undefined {
	if (config.defaultCwd !== "root") return undefined;
	if (!isPlain(options) || options.persist !== true) return undefined;
	// The whole root is an admin's area; a principal's is `<root>/@name` (areas.ts), its pool started for it.
	const root = areaOf(config, owner ?? "admin", true);
	if (session.cwd === root.path) return root;
	const own = owner === undefined ? undefined : areaOf(config, owner, false);
	return own && session.cwd === own.path ? own : undefined;
}

/** The cwd a pi session file's header names (its first line), or undefined. Read bounded: the agent writes the file. */
export function headerCwd(file: string): string | undefined {
	const head = readAgentFile(file, 16 * 1024);
	const end = head?.indexOf(10) ?? -1;
	if (!head || end < 0) return undefined;
	try {
		const header = JSON.parse(head.subarray(0, end).toString("utf8")) as unknown;
		if (typeof header !== "object" || header === null) return undefined;
		const { type, cwd } = header as { type?: unknown; cwd?: unknown };
		return type === "session" && typeof cwd === "string" ? cwd : undefined;
	} catch {
		return undefined;
	}
}

/** Whether `folder` holds at most `maxEntries` entries (counted one at a time). */
function small(folder: string): boolean {
	const dir = opendirSync(folder);
	try {
		let count = 0;
		while (dir.readSync()) if (++count > maxEntries) return false;
		return true;
	} finally {
		dir.closeSync();
	}
}

/** Moves what `from` holds into the empty `to` and removes `from`; undone when a rename fails. */
function moveEntries(from: string, to: string): void {
	const moved: string[] = [];
	try {
		for (const name of readdirSync(from)) {
			renameSync(join(from, name), join(to, name));
			moved.push(name);
		}
	} catch (error) {
		for (const name of moved)
			try {
				renameSync(join(to, name), join(from, name));
			} catch {}
		throw error;
	}
	try {
		rmdirSync(from);
	} catch {}
}

export interface WakeSteps {
	config: Config;
	/** Saves the session's record (its file moved: the record must name where it is now). */
	save: () => void;
	/** Stops a pooled pi that was taken and not used. */
	discard: (pooled: Pooled) => Promise<void>;
	/** Why the session starts cold after all (for the log). */
	cold: (why: string) => void;
	/** Whether another registered session's file lies in `folder` (then nothing of it is moved). */
	shared: (folder: string) => boolean;
	/** Throws when the session is no longer to be started: deleted meanwhile, or the gateway stopping. */
	assertWanted: () => void;
}

/**
 * Wakes `session` on `pooled` (true), or gives the pooled pi back to be stopped and leaves the
 * session as it was, but for its files' folder where they were moved (false: the caller starts
 * it cold, on the file where it is now).
 */
export async function wakeOnPooled(session: Session, pooled: Pooled, steps: WakeSteps): Promise<boolean> {
	await wanted();
	const file = session.piState.sessionFile;
	const folder = ownFolder(steps.config, file);
	const target = pooled.sessionDir;
	const fits =
		file !== undefined &&
		folder !== undefined &&
		target !== undefined &&
		pooled.session.cwd === session.cwd &&
		existsSync(file) &&
		headerCwd(file) === session.cwd &&
		readdirSync(target).length === 0 &&
		!steps.shared(folder) &&
		small(folder);
	if (!fits) return unused("its file or folder is not one a pooled pi can open");
	// What a cold start on the file would run (pi restores the file's last model and level): the
	// model it had when it went to sleep. A pooled pi started with --provider/--model (the demo model,
	// an operator's default) keeps those across a switch_session, so they are set (fitModel's way).
	const { model, thinkingLevel } = session.piState;
	if (!model) return unused("its model is not known");
	const moved = join(target, basename(file));
	try {
		moveEntries(folder, target);
	} catch (error) {
		return unused(`its files could not be moved (${(error as Error).message})`);
	}
	session.piState = { ...session.piState, sessionFile: moved };
	steps.save();
	let why = "pi did not open its file";
	let opened = false;
	try {
		const pi = pooled.session;
		const switched = await pi.direct({ type: "switch_session", sessionPath: moved });
		await pi.direct({ type: "get_state" });
		const cancelled = (switched.data as { cancelled?: unknown } | undefined)?.cancelled === true;
		opened =
			switched.success &&
			!cancelled &&
			pi.piState.sessionFile === moved &&
			(await restoreModel(pi, model, thinkingLevel));
	} catch (error) {
		why = `pi did not open its file (${(error as Error).message})`;
	}
	if (!opened) return unused(why);
	// Deleted, or the gateway stopping, while pi opened it: the pooled pi goes, nothing is started.
	// From here to adopt() nothing awaits: the pi is the pool's or the session's at every moment,
	// so a DELETE or a shutdown always finds it.
	await wanted();
	const child = pooled.session.release();
	if (!child) return unused("the pooled pi was not quiet");
	moveRelay(pooled.relay, session);
	const adopted = session.adopt(child);
	try {
		await adopted;
	} catch (error) {
		steps.assertWanted();
		steps.cold(`the pooled pi did not answer (${(error as Error).message})`);
		return false;
	}
	return true;

	async function unused(reason: string): Promise<false> {
		steps.cold(reason);
		await steps.discard(pooled);
		return false;
	}

	/** Throws (the pooled pi stopped first) when the session is no longer to be woken. */
	async function wanted(): Promise<void> {
		try {
			steps.assertWanted();
		} catch (error) {
			await steps.discard(pooled);
			throw error;
		}
	}
}

/** Sets the model and thinking level pi had before it slept, where the pooled pi's differ; false when pi refuses one. */
async function restoreModel(
	pi: Session,
	model: { provider: string; id: string },
	thinkingLevel: string | undefined,
): Promise<boolean> {
	const now = pi.piState.model;
	if (now?.provider !== model.provider || now.id !== model.id) {
		const set = await pi.direct({ type: "set_model", provider: model.provider, modelId: model.id });
		if (!set.success) return false;
		await pi.direct({ type: "get_state" });
	}
	const level = ThinkingLevel.safeParse(thinkingLevel);
	if (thinkingLevel !== undefined && !level.success) return false;
	if (level.success && pi.piState.thinkingLevel !== level.data) {
		const set = await pi.direct({ type: "set_thinking_level", level: level.data });
		if (!set.success) return false;
	}
	return true;
}
