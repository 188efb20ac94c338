import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

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
