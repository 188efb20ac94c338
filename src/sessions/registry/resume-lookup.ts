import type { Config } from "../../config/config.ts";
import { GatewayError } from "../../shared/errors.ts";
import type { Area } from "../process/areas.ts";
import { findSessionFiles, ownFolder } from "../process/session-files.ts";
import type { Session } from "../session/session.ts";
import type { LiveShare } from "./live-cap.ts";

/** Who creates a session: which sessions a `resume` of theirs may find. */
export interface Caller {
	/** An admin may also continue a file no session holds any more. */
	admin: boolean;
	sees(sessionId: string): boolean;
	/** Where the new session's folder is and its cwd must lie (areas.ts); absent: the whole root. */
	area?: Area;
	/** The creator's share of the live slots (live-cap.ts); absent: not held to one. */
	share?: LiveShare;
}

/** A registered session, and the pi id it was created to resume, if any. */
export interface Holder {
	id: string;
	session: Session;
	resume: string | undefined;
}

/**
 * The file `resume` (a pi id, or a prefix of one as pi's --session takes) names, among those the
 * caller may continue. One writer per pi session file: a file a registered session holds — live
 * or stopped, since a stopped one starts again on it — is resumed through that session (409,
 * POST …/resume), never by a second one. A session the caller may not see is not there (404, as
 * for an id that never existed), so nothing tells bob that alice's session exists; a file no
 * session holds any more (its session was deleted) is the operator's.
 */
export function resumeFile(config: Config, resume: string, caller: Caller, held: Holder[]): string {
	const inUse = ({ id, session }: Holder) =>
		new GatewayError(
			409,
			"session_file_in_use",
			`pi session ${resume} belongs to gateway session ${id} (${session.status}); use that session, or POST /v1/sessions/${id}/resume if it is stopped`,
		);
	for (const holder of held) {
		const holds = holder.session.piState.sessionId?.startsWith(resume) || holder.resume === resume;
		if (holds && caller.sees(holder.id)) throw inUse(holder);
	}
	// Every file in a session's own folder is that session's: its forks and clones too.
	const files = findSessionFiles(config, resume).filter((file) => {
		const folder = ownFolder(config, file);
		const holder = held.find(
			(h) => folder !== undefined && ownFolder(config, h.session.piState.sessionFile) === folder,
		);
		if (holder && caller.sees(holder.id)) throw inUse(holder);
		return holder === undefined && caller.admin;
	});
	const [file, ...more] = files;
	if (file === undefined)
		throw new GatewayError(404, "pi_session_not_found", `No pi session ${resume} that this caller may continue`);
	if (more.length > 0)
		throw new GatewayError(
			409,
			"resume_ambiguous",
			`pi session id ${resume} matches ${files.length} files; give more of it`,
		);
	return file;
}
