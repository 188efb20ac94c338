import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { JsonlDecoder, type JsonlHandlers } from "./jsonl.ts";
import {
	childrenOf,
	findExecutable,
	killGroup,
	killTagged,
	newTag,
	signalFromStatus,
	tagVariable,
} from "./process-tree.ts";

/**
 * Where a sandboxed pi's stdin and stdout reach bwrap (sessions/sandbox.ts moves them to 0 and 1
 * as pi starts): not bwrap's own 0 and 1, which its init keeps in the tools' reach.
 */
export const piStdinFd = 4;
export const piStdoutFd = 5;
export const piStderrFd = 6;

export interface PiProcessOptions {
	command: string;
	args: string[];
	cwd: string;
	env: NodeJS.ProcessEnv;
	maxLineChars: number;
	stderrTailBytes: number;
	/** Set when `command` is bwrap running `sandboxed.command`: the sandbox changes how pi's end looks. */
	sandboxed?: { command: string };
	/**
	 * The folder to hand the child as descriptor 3 (bwrap's `--bind-fd 3`), opened by `openFolder`
	 * just before the spawn and closed just after: what the sandbox binds is what was checked.
	 */
	bindFolder?: { path: string; root: string };
	openFolder?(path: string, root: string): number;
}

export interface ExitInfo {
	code: number | null;
	signal: NodeJS.Signals | null;
	/** True when the gateway asked it to stop (close()); false for a crash or an exit of pi's own. */
	requested: boolean;
}

const stdoutClosedGraceMs = 1000;

/**
 * One `pi --mode rpc` child: spawned without a shell, stdout read continuously through the
 * JSONL decoder, stdin writes that respect backpressure, stderr kept as a bounded tail.
 */
export class PiProcess {
	readonly #options: PiProcessOptions;
	#child: ChildProcess | undefined;
	/** pi's end of the protocol: the child's stdin and stdout, or the descriptors a sandboxed pi is given them on. */
	#stdin: Writable | undefined;
	#stderr: Buffer[] = [];
	#stderrBytes = 0;
	#closeRequested = false;
	#exitInfo: ExitInfo | undefined;
	/** Escalation timers: cleared at exit, or each would keep this object (and its session) alive for seconds. */
	readonly #timers = new Set<NodeJS.Timeout>();
	/** In every descendant's environment: how the processes pi's tools started are found after pi is gone. */
	readonly #tag = newTag();
	readonly exited: Promise<ExitInfo>;
	#resolveExit!: (info: ExitInfo) => void;
	/**
	 * Where pi's lines go (`route`): the session that started it, or the one it was handed to. The
	 * decoder holds this very object, so a new route costs the per-line path nothing.
	 */
	readonly #sink: JsonlHandlers = { onLine: () => {}, onOverflow: () => {} };

	constructor(options: PiProcessOptions) {
		this.#options = options;
		this.exited = new Promise((resolve) => {
			this.#resolveExit = resolve;
		});
	}

	get pid(): number | undefined {
		return this.#child?.pid;
	}

	/**
	 * Where pi's lines go from now on: set by the session that starts it before start(), and again by
	 * one it is handed to (a warm pool's pi that wakes a session: registry/pooled-wake.ts).
	 */
	route(sink: JsonlHandlers): void {
		this.#sink.onLine = sink.onLine;
		this.#sink.onOverflow = sink.onOverflow;
	}

	get exitInfo(): ExitInfo | undefined {
		return this.#exitInfo;
	}

	get stderrTail(): string {
		return Buffer.concat(this.#stderr).toString("utf8");
	}

	/** Resolves once the OS started the process; rejects when it could not (ENOENT, EACCES). */
	async start(): Promise<void> {
		const { command, args, cwd, env } = this.#options;
		let child: ChildProcess;
		try {
			// bwrap starts whatever it is given and fails only inside: say ENOENT here, as spawn would.
			const inner = this.#options.sandboxed?.command;
			if (inner && !findExecutable(inner, env.PATH)) {
				throw Object.assign(new Error(`spawn ${inner} ENOENT`), { code: "ENOENT" });
			}
			const { bindFolder, openFolder } = this.#options;
			const folder = bindFolder && openFolder ? openFolder(bindFolder.path, bindFolder.root) : undefined;
			// Its own process group (detached), so a signal reaches pi and whatever it did not move elsewhere.
			// A bound folder is given by descriptor; bwrap itself then starts in / (no path is trusted).
			try {
				child = spawn(command, args, {
					cwd: folder === undefined ? cwd : "/",
					env: { ...env, [tagVariable]: this.#tag },
					// Sandboxed, pi's stdin and stdout are not bwrap's: bwrap's init (pid 1 of the namespace,
					// dumpable, in the tools' reach) keeps its own 0–2 and closes the rest (sandbox.ts).
					stdio: this.#options.sandboxed
						? ["ignore", "ignore", "pipe", folder ?? "ignore", "pipe", "pipe", "pipe"]
						: folder === undefined
							? ["pipe", "pipe", "pipe"]
							: ["pipe", "pipe", "pipe", folder],
					shell: false,
					detached: true,
				});
			} finally {
				if (folder !== undefined) closeSync(folder);
			}
		} catch (error) {
			// Refused before any process existed (an argument Node will not pass): nothing to wait for.
			this.#exitInfo = { code: null, signal: null, requested: false };
			this.#resolveExit(this.#exitInfo);
			throw error;
		}
		this.#child = child;
		const sandboxed = this.#options.sandboxed !== undefined;
		const stdio = child.stdio as (Readable | Writable | null | undefined)[];
		const stdin = (sandboxed ? stdio[piStdinFd] : child.stdin) as Writable;
		const stdout = (sandboxed ? stdio[piStdoutFd] : child.stdout) as Readable;
		const stderr = (sandboxed ? stdio[piStderrFd] : child.stderr) as Readable;
		if (sandboxed) this.#keepBwrapStderr(child.stderr as Readable);
		this.#stdin = stdin;
		const decoder = new JsonlDecoder(this.#options.maxLineChars, this.#sink);
		stdout.on("data", (chunk: Buffer) => decoder.push(chunk));
		stdout.on("end", () => {
			decoder.end();
			// pi answers only on stdout: a child that closed it can never answer again. A normal
			// exit closes stdout a moment before the process ends, so give it that moment first.
			this.#after(stdoutClosedGraceMs, () => this.#signal(child, "SIGKILL"));
		});
		stderr.on("data", (chunk: Buffer) => this.#keepStderr(chunk));
		// A dead child's stdin raises EPIPE; the exit handler reports the death, so these are noise.
		stdin.on("error", () => {});
		// Tool processes die with their pi, however it ended: exit, crash or stop.
		child.on("exit", () => killTagged(this.#tag));
		child.on("close", (code, signal) => {
			for (const timer of this.#timers) clearTimeout(timer);
			this.#timers.clear();
			// bwrap exits 128+N when pi died of signal N: report it as the signal, as without the sandbox.
			const relayed = this.#options.sandboxed ? signalFromStatus(code) : undefined;
			this.#exitInfo = relayed
				? { code: null, signal: relayed, requested: this.#closeRequested }
				: { code, signal, requested: this.#closeRequested };
			this.#resolveExit(this.#exitInfo);
		});
		await Promise.race([
			once(child, "spawn"),
			once(child, "error").then(([error]) => {
				throw error;
			}),
		]);
	}

	/** Writes one framed record; resolves when the pipe accepted it (waits for `drain` when full). */
	async write(line: string): Promise<void> {
		const stdin = this.#stdin;
		if (!stdin || this.#exitInfo || stdin.writableEnded || stdin.destroyed) throw new Error("pi is not running");
		if (stdin.write(line)) return;
		await Promise.race([once(stdin, "drain"), this.exited]);
	}

	/** Orderly stop: close stdin (pi's shutdown request), then SIGTERM, then SIGKILL. */
	async close(graceMs: number): Promise<ExitInfo> {
		const child = this.#child;
		if (!child || this.#exitInfo) return this.exited;
		this.#closeRequested = true;
		this.#stdin?.end();
		this.#after(graceMs, () => this.#signal(child, "SIGTERM"));
		this.#after(graceMs * 2, () => this.#signal(child, "SIGKILL"));
		return this.exited;
	}

	/** Runs `action` after `ms` unless the child has exited by then. */
	#after(ms: number, action: () => void): void {
		const timer = setTimeout(() => {
			this.#timers.delete(timer);
			if (!this.#exitInfo) action();
		}, ms).unref();
		this.#timers.add(timer);
	}

	/**
	 * Immediate kill, for tests and for a child that failed to start. Its tool processes go when
	 * the exit event comes; `sweepNow` ends them at once, for process.on("exit"), where it never comes.
	 */
	kill(signal: NodeJS.Signals = "SIGKILL", sweepNow = false): void {
		if (this.#child && !this.#exitInfo) this.#signal(this.#child, signal);
		if (sweepNow) killTagged(this.#tag);
	}

	/** Signals pi's whole process group (pi and what it did not detach), or pi alone if that fails. */
	#signal(child: ChildProcess, signal: NodeJS.Signals): void {
		// bwrap dies of a SIGTERM without passing it on (and its namespace with it): a sandboxed pi
		// gets its SIGTERM directly (bwrap → bwrap, init of the namespace → pi), so it can shut down in order.
		if (signal !== "SIGKILL" && this.#options.sandboxed && child.pid !== undefined) {
			const pis = childrenOf(child.pid).flatMap((init) => childrenOf(init));
			for (const pid of pis) process.kill(pid, signal);
			if (pis.length > 0) return;
		}
		if (child.pid === undefined || !killGroup(child.pid, signal)) child.kill(signal);
	}

	/**
	 * bwrap's own stderr: its errors (a mount it could not make) until the wrapper's NUL byte says
	 * pi is starting; after it, only a process holding bwrap's init's copy writes there — a tool —
	 * so nothing more is kept (sessions/sandbox.ts).
	 */
	#keepBwrapStderr(stream: Readable): void {
		let started = false;
		stream.on("data", (chunk: Buffer) => {
			if (started) return;
			const marker = chunk.indexOf(0);
			if (marker === -1) return this.#keepStderr(chunk);
			started = true;
			if (marker > 0) this.#keepStderr(chunk.subarray(0, marker));
		});
	}

	#keepStderr(chunk: Buffer): void {
		this.#stderr.push(chunk);
		this.#stderrBytes += chunk.length;
		const limit = this.#options.stderrTailBytes;
		while (this.#stderrBytes > limit && this.#stderr.length > 1) {
			this.#stderrBytes -= (this.#stderr.shift() as Buffer).length;
		}
		const first = this.#stderr[0];
		if (first && this.#stderrBytes > limit) {
			this.#stderr[0] = first.subarray(this.#stderrBytes - limit);
			this.#stderrBytes = limit;
		}
	}
}
