import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * The node that runs a sandboxed pi: a copy of the gateway's own, execute-only (mode 0111), in the
 * data dir. Tools run as pi's user in pi's namespaces, and a process of the same user may ptrace
 * another, take its descriptors (`pidfd_getfd`) or open its /proc memory, fds, maps and environ —
 * unless that process is not dumpable and the caller holds no capability (nothing in the sandbox
 * does, root included). The kernel makes a process non-dumpable when it execs a file it cannot
 * read: so pi is, and its tools' own execs make them dumpable again, never it. An attacker's review
 * took pi's stdout with pidfd_getfd and printed events, dialogs and `agent_settled` as pi.
 */
export function sealedNode(dataDir: string, source = process.execPath): string {
	const stat = statSync(source);
	const dir = join(dataDir, "runtime");
	// Named by what it was copied from: a node upgraded in place gets a copy of its own.
	const name = `node-${stat.ino}-${stat.size}-${Math.trunc(stat.mtimeMs)}`;
	const path = join(dir, name);
	if (existsSync(path) && statSync(path).size === stat.size) return path;
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	const temp = `${path}.${process.pid}.part`;
	copyFileSync(source, temp);
	chmodSync(temp, 0o111);
	// Whole or not at all: a gateway killed mid-copy leaves a .part, never a truncated node.
	renameSync(temp, path);
	for (const entry of readdirSync(dir))
		if (entry !== name && entry.startsWith("node-")) rmSync(join(dir, entry), { force: true });
	return path;
}
