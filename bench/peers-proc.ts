/**
 * CPU and memory of a whole process tree from /proc, for the peer benchmark: a server and every
 * process under it (pi, bwrap around it, pi-acp), so a server that does its work in children is
 * charged for them as one that does it in-process is.
 */
import { readdirSync, readFileSync } from "node:fs";

/** The live children of a process (of all its threads). */
export function childrenOf(pid: number): number[] {
	const children: number[] = [];
	try {
		for (const task of readdirSync(`/proc/${pid}/task`))
			try {
				for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean))
					children.push(Number(child));
			} catch {}
	} catch {}
	return children;
}

/** The pid and its live descendants (none when the pid itself has exited) (children of every thread, as /proc/<pid>/task/<tid>/children lists them). */
export function processTree(root: number): number[] {
	const pids: number[] = [];
	const walk = (pid: number) => {
		let tasks: string[] = [];
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
			if (stat[stat.lastIndexOf(")") + 2] === "Z") return; // exited, not reaped yet
			tasks = readdirSync(`/proc/${pid}/task`);
		} catch {
			return; // exited meanwhile
		}
		pids.push(pid);
		for (const task of tasks) {
			let children: string[] = [];
			try {
				children = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean);
			} catch {}
			for (const child of children) walk(Number(child));
		}
	};
	walk(root);
	return pids;
}

/**
 * CPU seconds of the tree: each live process's own time plus the time of the children it reaped
 * (git runs, a closed pi), so work done by a process that has exited since is still counted.
 */
export function treeCpuSeconds(root: number): number {
	let ticks = 0;
	for (const pid of processTree(root)) {
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
			const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
		} catch {}
	}
	return ticks / 100;
}

/** Proportional set size of one process in bytes (0 once it is gone). */
export function pssBytes(pid: number): number {
	try {
		return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0) * 1024;
	} catch {
		return 0;
	}
}

/** Proportional set size of the tree in bytes: shared pages divided among the processes that share them. */
export function treePssBytes(root: number): number {
	return processTree(root).reduce((sum, pid) => sum + pssBytes(pid), 0);
}
