import { execFileSync } from "node:child_process";

/** pids of `pi --mode rpc` children (real or stub) on this machine. */
export function piProcesses(): string[] {
	try {
		return execFileSync("pgrep", ["-f", "--", "--mode rpc"], { encoding: "utf8" }).trim().split("\n").filter(Boolean);
	} catch {
		return [];
	}
}

let before: Set<string>;

export function setup(): void {
	before = new Set(piProcesses());
}

/** The suite fails if it leaves a pi child behind. */
export async function teardown(): Promise<void> {
	for (let i = 0; i < 50; i++) {
		const leaked = piProcesses().filter((pid) => !before.has(pid));
		if (leaked.length === 0) return;
		await new Promise((r) => setTimeout(r, 100));
	}
	const leaked = piProcesses().filter((pid) => !before.has(pid));
	if (leaked.length === 0) return;
	throw new Error(`pi processes left running after the suite: ${leaked.join(", ")}`);
}
