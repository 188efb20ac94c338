// The spawner thread (tool-spawner.ts): runs each job it is sent and answers with its output or failure.
import { parentPort } from "node:worker_threads";
import { failureOf, runTool, type ToolJob } from "./tool-run.ts";

parentPort?.on("message", ({ id, job }: { id: number; job: ToolJob }) => {
	runTool(job).then(
		(output) => parentPort?.postMessage({ id, output }),
		(error) => parentPort?.postMessage({ id, failure: failureOf(error) }),
	);
});
