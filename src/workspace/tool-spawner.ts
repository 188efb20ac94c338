import { Worker } from "node:worker_threads";
import { moduleFile } from "../shared/package-files.ts";
import { errorOf, runTool, ToolError, type ToolFailure, type ToolJob, type ToolOutput } from "./tool-run.ts";

/**
 * Runs bookkeeping tools (git for snapshots and diffs) from a thread of their own. Each spawn holds
 * the thread that makes it until bwrap has exec'd: 7–40 ms measured per git on the event loop,
 * seven gits a run, landing on prompts' first deltas and on other sessions' streams. From this
 * thread they hold only it. When the thread cannot start, jobs run on the event loop as before;
 * when it dies, the jobs it held fail and later ones run on the event loop.
 */
let worker: Worker | undefined;
let broken = false;
let next = 0;
const pending = new Map<
	number,
	{ resolve: (output: ToolOutput) => void; reject: (error: Error) => void; job: ToolJob }
>();

function thread(): Worker | undefined {
	if (worker || broken) return worker;
	try {
		const started = new Worker(moduleFile("workspace/tool-thread"));
		started.on("message", ({ id, output, failure }: { id: number; output?: ToolOutput; failure?: ToolFailure }) => {
			const job = pending.get(id);
			pending.delete(id);
			if (pending.size === 0) started.unref();
			if (!job) return;
			if (output) job.resolve(output);
			else job.reject(errorOf(failure as ToolFailure));
		});
		const lost = () => {
			if (worker === started) worker = undefined;
			broken = true;
			// What the thread held fails (its snapshot is missing, as for a git that failed) rather
			// than run again here: a git it started outlives the thread, and two on one index clash.
			for (const [id, job] of pending) {
				pending.delete(id);
				job.reject(new ToolError(`${job.job.name} was lost with the thread that ran it`));
			}
		};
		started.on("error", lost);
		started.on("exit", lost);
		// After the listeners: adding a "message" listener refs the thread again, and a ref'd idle
		// thread keeps the process from exiting (`openapi.ts --check` hung).
		started.unref();
		worker = started;
	} catch {
		broken = true;
	}
	return worker;
}

/** Starts the thread ahead of the first job: loading its modules takes a few hundred ms, which a session's first snapshot would otherwise wait for. */
export function warmToolThread(): void {
	thread();
}

export function runToolOffLoop(job: ToolJob): Promise<ToolOutput> {
	const spawner = thread();
	if (!spawner) return runTool(job);
	return new Promise((resolve, reject) => {
		const id = ++next;
		pending.set(id, { resolve, reject, job });
		// A job in flight keeps the process up (a stopping gateway waits for its gits).
		spawner.ref();
		spawner.postMessage({ id, job });
	});
}
