import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * The node that runs a sandboxed pi: a copy of the gateway's own, execute-only (mode 0111). Tools
 * run as pi's user in pi's namespaces, and a process of the same user may ptrace another, take its
 * descriptors (`pidfd_getfd`) or open its /proc memory, fds, maps and environ — unless that process
 * is not dumpable and the caller holds no capability (nothing in the sandbox does, root included).
 * The kernel makes a process non-dumpable when it execs a file it cannot read: so pi is, and its
 * tools' own execs make them dumpable again, never it. An attacker's review took pi's stdout with
 * pidfd_getfd and printed events, dialogs and `agent_settled` as pi.
 *
 * It lives in the user's cache folder, not the data dir: it is ≈ the size of node, and a data dir
 * on a small disk filled up making it at a create (a 500 where a full disk answers 507). Made once
 * at start (prepareSealedNode); without it pi runs from node itself, and the start says so.
 */
let prepared: { path: string } | { error: string } | undefined;

/** The copy for `source`, made if missing (whole or not at all: a .part is renamed into place). */
export function sealedNode(dir = sealedNodeDir(), source = process.execPath): string {
	const stat = statSync(source);
	// Named by what it was copied from: a node upgraded in place gets a copy of its own.
	const path = join(dir, `node-${stat.ino}-${stat.size}-${Math.trunc(stat.mtimeMs)}`);
	if (existsSync(path) && statSync(path).size === stat.size) return path;
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	const temp = `${path}.${process.pid}.part`;
	try {
		copyFileSync(source, temp);
		chmodSync(temp, 0o111);
		renameSync(temp, path);
	} finally {
		rmSync(temp, { force: true });
	}
	return path;
}

export function sealedNodeDir(): string {
	return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "pi-gateway", "runtime");
}

/** Makes the copy at start; the reason when it could not (a full or read-only disk). */
export function prepareSealedNode(): string | undefined {
	try {
		prepared = { path: sealedNode() };
		return undefined;
	} catch (error) {
		prepared = { error: (error as Error).message };
		return prepared.error;
	}
}

/** What runs a sandboxed pi that would run on the gateway's own node. */
export function sealedRunner(): string {
	// Made again if it went (a cache folder cleared while the gateway runs): else every create
	// would fail on a node that is not there.
	if (prepared === undefined || ("path" in prepared && !existsSync(prepared.path))) prepareSealedNode();
	return prepared && "path" in prepared ? prepared.path : process.execPath;
}
