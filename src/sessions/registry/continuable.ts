import { existsSync } from "node:fs";
import type { Config } from "../../config/config.ts";
import { GatewayError } from "../../shared/errors.ts";
import { ownFolder } from "../process/session-files.ts";
import type { CreateSessionBody } from "../process/spawn.ts";
import type { Session } from "../session/session.ts";
import { guardResume } from "./guard.ts";
import { type Caller, resumeFile } from "./resume-lookup.ts";

/** The registered session (but `except`) whose own folder of pi session files is `folder`, if any. */
export function folderHolder(
	config: Config,
	sessions: Iterable<[string, Session]>,
	folder: string | undefined,
	except: string,
): Session | undefined {
	if (folder === undefined) return undefined;
	for (const [id, session] of sessions)
		if (id !== except && ownFolder(config, session.piState.sessionFile) === folder) return session;
	return undefined;
}

/**
 * Refuses to start pi again on a session whose conversation cannot be continued: its file was
 * seen and is gone, or it lies in an older session's folder.
 */
export function assertContinuable(config: Config, session: Session, sessions: Iterable<[string, Session]>): void {
	const file = session.piState.sessionFile;
	// pi writes its file only once there is something to keep, so a file never seen may just not
	// exist yet; one seen and gone now would make pi start an empty conversation under the old id.
	if (file && session.piState.fileSeen && !existsSync(file)) {
		throw new GatewayError(
			409,
			"session_file_missing",
			`Session ${session.id}'s pi session file ${file} is gone; its conversation cannot be continued (DELETE it, or restore the file)`,
		);
	}
	// Two sessions never share a folder (switch and resume keep to their own); a record that names
	// an older session's folder (written before that held) does not start on it.
	const holder = folderHolder(config, sessions, ownFolder(config, file), session.id);
	if (holder && holder.createdAt.getTime() <= session.createdAt.getTime()) {
		throw new GatewayError(
			409,
			"session_file_in_use",
			`Session ${session.id}'s pi session file lies in another session's folder; it cannot be continued (DELETE it)`,
		);
	}
}

/** The file a create's `resume` names among those `caller` may continue (resume-lookup.ts). */
export function resumeFileFor(
	config: Config,
	resume: string,
	caller: Caller,
	sessions: Iterable<[string, Session]>,
	options: (id: string) => CreateSessionBody | undefined,
): string {
	const held = [...sessions].map(([id, session]) => ({ id, session, resume: options(id)?.resume }));
	const file = resumeFile(config, resume, caller, held);
	guardResume(config, file);
	return file;
}
