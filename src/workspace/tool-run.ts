import { threadId } from "node:worker_threads";
import { GatewayError } from "../shared/errors.ts";
import { type Confinement, spawnConfined, type Tool, type ToolProcess } from "./confined.ts";

/** One run of a confined tool to its end: what git.ts asks, here or in the spawner thread. */
export interface ToolJob {
	confine: Confinement | undefined;
	tool: Tool;
	/** The tool's name in messages (`git add`). */
	name: string;
	timeoutMs: number;
	maxBytes: number;
}

export interface ToolOutput {
	out: Uint8Array;
	cut: boolean;
	stderr: string;
	/** The thread that spawned it (0: the event loop's). */
	thread: number;
}

/** A failure as it crosses threads: a folder replaced by a link stays the caller's 409. */
export type ToolFailure =
	| { kind: "gateway"; status: number; code: string; message: string }
	| { kind: "tool"; message: string };

export class ToolError extends Error {}

export function failureOf(error: unknown): ToolFailure {
	if (error instanceof GatewayError)
		return { kind: "gateway", status: error.status, code: error.code, message: error.message };
	return { kind: "tool", message: (error as Error).message };
}

export function errorOf(failure: ToolFailure): Error {
	return failure.kind === "gateway"
		? new GatewayError(failure.status, failure.code, failure.message)
		: new ToolError(failure.message);
}

/**
 * Runs the tool; resolves its stdout (at most `maxBytes`, then it is stopped and `cut` is set).
 * Rejects on a non-zero exit or when `timeoutMs` passes (the tool is killed).
 */
export function runTool(job: ToolJob): Promise<ToolOutput> {
	const { maxBytes, name } = job;
	return new Promise((resolve, reject) => {
		let child: ToolProcess;
		try {
			child = spawnConfined(job.confine, job.tool);
		} catch (error) {
			if (error instanceof GatewayError) reject(error);
			else reject(new ToolError(`${name} did not start: ${(error as Error).message}`));
			return;
		}
		if (job.tool.input && child.stdin) {
			// A tool that exits without reading it all: EPIPE is its exit's to report, not a crash.
			child.stdin.on("error", () => {});
			child.stdin.end(job.tool.input);
		}
		const chunks: Buffer[] = [];
		let size = 0;
		let cut = false;
		let stderr = "";
		// Killed at its deadline, it fails once it has exited (a stopping gateway waits for that), or
		// 5 s later if something it started still holds its pipes.
		let late: ToolError | undefined;
		const timer = setTimeout(() => {
			late = new ToolError(`${name} took longer than ${job.timeoutMs} ms`);
			child.kill("SIGKILL");
			const failed = late;
			setTimeout(() => reject(failed), 5000).unref();
		}, job.timeoutMs);
		child.stdout.on("data", (chunk: Buffer) => {
			if (cut) return;
			if (size + chunk.length > maxBytes) {
				chunks.push(chunk.subarray(0, maxBytes - size));
				size = maxBytes;
				cut = true;
				child.kill("SIGKILL");
				return;
			}
			chunks.push(chunk);
			size += chunk.length;
		});
		child.stderr.on("data", (chunk: Buffer) => {
			if (stderr.length < 4096) stderr += chunk.toString("utf8");
		});
		child.on("error", (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on("close", (code) => {
			clearTimeout(timer);
			if (late) reject(late);
			else if (code === 0 || cut) resolve({ out: Buffer.concat(chunks), cut, stderr, thread: threadId });
			else reject(new ToolError(`${name} failed (${code}): ${stderr.trim().slice(0, 500)}`));
		});
	});
}
