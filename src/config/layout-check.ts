import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative } from "node:path";

/** A path with its existing part's links resolved (what a folder below it really is). */
function realOrResolved(path: string): string {
	let head = path;
	const tail: string[] = [];
	for (;;) {
		try {
			return join(realpathSync(head), ...tail.reverse());
		} catch {
			const parent = dirname(head);
			if (parent === head) return path;
			tail.push(basename(head));
			head = parent;
		}
	}
}

/**
 * The data dir (the database, the token, every conversation, the shadow repositories) and the
 * folders agents work in never overlap: a workspace root that contains the data dir made
 * `cwd: ".pi-gateway"` a session reading gateway.db and the token through the files API; a root
 * inside it could be or contain a folder of the gateway's own. The one exception is the default,
 * <data-dir>/workspaces, a folder the gateway keeps for agents alone.
 */
export function refuseOverlap(dataDir: string, workspaceRoot: string, explicit: boolean): void {
	const data = realOrResolved(dataDir);
	const root = realOrResolved(workspaceRoot);
	const inside = (outer: string, inner: string) => {
		const rel = relative(outer, inner);
		return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
	};
	if (explicit && inside(root, data))
		throw new Error(
			`--workspace-root ${root} contains the data dir ${data}: every session could read the gateway's database, token and conversations. Give --data-dir a folder outside it (e.g. --data-dir /var/lib/pi-gateway) or a --workspace-root that does not contain it`,
		);
	if (explicit && inside(data, root) && root !== join(data, "workspaces"))
		throw new Error(
			`--workspace-root ${root} lies inside the data dir ${data}, among the gateway's own files. Use a folder outside the data dir, or leave --workspace-root out (sessions then work in ${join(data, "workspaces")})`,
		);
}

/** Who may be shown a path read-only in the sandbox, and what it must keep out of sight. */
export interface ReadableGuard {
	dataDir: string;
	workspaceRoot: string;
	/** The files the gateway reads a secret from (token, keys, config, …). */
	secrets: string[];
	/** The operator's pi agent dir (--pi-agent-dir, PI_CODING_AGENT_DIR, ~/.pi/agent): the real models.json and auth.json. */
	agentDir: string;
	/** Folders agents write besides the workspace root (--sandbox-writable). */
	writable: string[];
	/** A session's path: the area of the principal it belongs to. Absent: the operator's --sandbox-readable. */
	area?: { path: string; admin: boolean };
}

/**
 * Why `path` may not be shown read-only in a sandbox beside its allowlist, or undefined when it may.
 * It must be absolute and exist; its real path must not be, hold or lie in the data dir or the
 * operator's pi agent dir (the provider keys the relay adds: an admin's `sandboxReadable: ["$HOME/.pi"]`
 * showed them to the agent), be or hold a file the gateway reads a secret from, or hold the
 * workspace root (every principal's area), and
 * it must not lie in a folder an agent writes (the workspace root, a --sandbox-writable path): bwrap
 * binds it by its path, so an agent's process swapping a folder on it for a relative link to `/`
 * between this check and the mount showed the host's /tmp and the data dir in its place (an
 * attacker's review read the gateway's token so). Only an admin adds paths to a session: a
 * principal's own folders are all its agent's to change, and the host is not its to read.
 */
export function readableProblem(path: string, guard: ReadableGuard): { detail: string; missing?: boolean } | undefined {
	const inside = (outer: string, inner: string) => {
		const rel = relative(outer, inner);
		return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
	};
	const name = JSON.stringify(path);
	if (!isAbsolute(path)) return { detail: `${name} is not an absolute path` };
	let real: string;
	try {
		real = realpathSync(path);
	} catch {
		return { detail: `${name} does not exist`, missing: true };
	}
	const data = realOrResolved(guard.dataDir);
	const root = realOrResolved(guard.workspaceRoot);
	if (inside(data, real) || inside(real, data))
		return { detail: `${name} is, holds or lies in the gateway's data dir (its database, token and conversations)` };
	const agent = realOrResolved(guard.agentDir);
	if (inside(agent, real) || inside(real, agent))
		return {
			detail: `${name} is, holds or lies in the operator's pi agent dir ${agent} (its models.json and auth.json hold the provider keys)`,
		};
	const secret = guard.secrets.map(realOrResolved).find((file) => inside(real, file));
	if (secret) return { detail: `${name} is or holds ${secret}, a file the gateway reads a secret from` };
	if (inside(real, root)) return { detail: `${name} holds the workspace root ${root}, every principal's folders` };
	if (inside(root, real))
		return {
			detail: `${name} lies in the workspace root, where agents write: a link swapped in on its path between this check and the mount could show any folder`,
		};
	const writable = guard.writable.map(realOrResolved).find((w) => inside(w, real) || inside(real, w));
	if (writable) return { detail: `${name} is, holds or lies in ${writable} (--sandbox-writable), where agents write` };
	if (guard.area && !guard.area.admin)
		return {
			detail: `${name}: only an admin adds host paths to a session; the operator shows paths to every session with --sandbox-readable`,
		};
	return undefined;
}
