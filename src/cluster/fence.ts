import { type ChildProcess, spawn } from "node:child_process";
import type { Logger } from "pino";
import { moduleFile } from "../shared/package-files.ts";

const watchdogPath = moduleFile("cluster/fence-watchdog");

/**
 * Stops this node's pi processes when its lease runs out, even if the gateway itself cannot run
 * (SIGSTOP, a stalled VM): a watchdog process (fence-watchdog.ts) holds the deadline and the pids.
 * The deadline is set below the lease the database holds, so every pi of this node is dead before
 * another node may start one of its sessions: two writers on one conversation never happen.
 */
export class Fence {
	readonly #child: ChildProcess;
	readonly #pids = new Map<string, number>();

	constructor(logger: Logger) {
		this.#child = spawn(process.execPath, [watchdogPath], { stdio: ["pipe", "ignore", "pipe"] });
		this.#child.stderr?.setEncoding("utf8").on("data", (text: string) => logger.warn({ fence: text.trim() }, "fence"));
		this.#child.stdin?.on("error", () => {});
		this.#child.unref();
	}

	/** The lease holds until `deadline` (process.hrtime.bigint() clock). */
	arm(deadline: bigint): void {
		this.#send(`d ${deadline}`);
	}

	guard(sessionId: string, pid: number): void {
		this.#pids.set(sessionId, pid);
		this.#send(`g ${pid}`);
	}

	unguard(sessionId: string): void {
		const pid = this.#pids.get(sessionId);
		if (pid === undefined) return;
		this.#pids.delete(sessionId);
		this.#send(`u ${pid}`);
	}

	get pid(): number | undefined {
		return this.#child.pid;
	}

	close(): void {
		this.#child.stdin?.end();
	}

	#send(line: string): void {
		if (this.#child.stdin?.writable) this.#child.stdin.write(`${line}\n`);
	}
}
