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
