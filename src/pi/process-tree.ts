import { randomBytes } from "node:crypto";
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import { constants as os } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";

/**
 * Finding every process a pi started, even after pi is gone. pi's bash tool starts each command
 * in a process group of its own (detached), so killing pi's group misses them, and once pi dies
 * they are re-parented to PID 1 and the tree is lost. What they all keep is pi's environment: each
 * child gets a random tag, and a sweep of /proc/<pid>/environ finds every holder. (In the sandbox
 * the PID namespace already ends them all; the sweep is the same code path either way.)
 */
export const tagVariable = "PIGW_CHILD_TAG";

export function newTag(): string {
	return randomBytes(12).toString("hex");
}

/** Pids (other than this process) whose environment carries `tag`. Linux only; elsewhere none. */
export function taggedPids(tag: string): number[] {
	if (process.platform !== "linux") return [];
	const needle = `\0${tagVariable}=${tag}\0`;
	const found: number[] = [];
	let entries: string[];
	try {
		entries = readdirSync("/proc");
	} catch {
		return [];
	}
	for (const entry of entries) {
		if (!/^\d+$/.test(entry)) continue;
		const pid = Number(entry);
		if (pid === process.pid) continue;
		try {
			// A leading NUL makes the first variable match like the others.
			if (`\0${readFileSync(`/proc/${entry}/environ`, "latin1")}`.includes(needle)) found.push(pid);
		} catch {
			// Gone already, or not ours to read.
		}
	}
	return found;
}

/** Sends `signal` to every process carrying `tag`; returns how many were signalled. */
export function killTagged(tag: string, signal: NodeJS.Signals = "SIGKILL"): number {
	let count = 0;
	for (const pid of taggedPids(tag)) {
		try {
			process.kill(pid, signal);
			count++;
		} catch {}
	}
	return count;
}

/** Signals a whole process group (a detached child's pid is its group id); false when there is none. */
export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
	try {
		process.kill(-pgid, signal);
		return true;
	} catch {
		return false;
	}
}

/** Direct children of `pid` (from /proc/<pid>/stat); empty where there is no /proc. */
export function childrenOf(pid: number): number[] {
	const found: number[] = [];
	let entries: string[] = [];
	try {
		entries = readdirSync("/proc");
	} catch {}
	for (const entry of entries) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, "latin1");
			// The name in parentheses may hold spaces; the parent pid is the second field after it.
			if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) found.push(Number(entry));
		} catch {}
	}
	return found;
}

/** Where a command would be found (a path as is, a bare name on PATH); undefined when nowhere. */
export function findExecutable(command: string, path = ""): string | undefined {
	const candidates = command.includes("/") ? [command] : path.split(delimiter).map((dir) => join(dir, command));
	for (const candidate of candidates) {
		if (!isAbsolute(candidate) && !command.includes("/")) continue;
		try {
			accessSync(candidate, constants.X_OK);
			return candidate;
		} catch {}
	}
	return undefined;
}

/** A shell-style exit status 128+N back to the signal N, as bwrap reports a signalled child. */
export function signalFromStatus(code: number | null): NodeJS.Signals | undefined {
	if (code === null || code <= 128) return undefined;
	return (Object.entries(os.signals) as [NodeJS.Signals, number][]).find(([, n]) => n === code - 128)?.[0];
}
