/**
 * The reference line of the peer benchmark (bench/peers.ts): pi alone, on a stdio pipe, no server
 * between it and the client. A fresh pi (as each server's long answer is a new session's first
 * prompt) answers the same scripted model; what it shows is what pi itself costs, so the table
 * can say which of a row's milliseconds are the server's and which are pi's.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createInterface } from "node:readline";
import { bundledPiCli } from "../src/sessions/process/spawn.ts";
import { treeCpuSeconds } from "./peers-proc.ts";
import { deltaClock, type PromptTiming, piAgentDir } from "./peers-servers.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function pipeAnswer(baseUrl: string, tokens: number, timeoutMs: number): Promise<PromptTiming> {
	const agentDir = piAgentDir(baseUrl);
	const pi = spawn(process.execPath, [bundledPiCli(), "--mode", "rpc", "--no-session"], {
		env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" },
		stdio: ["pipe", "pipe", "ignore"],
	});
	const timer = setTimeout(() => pi.kill("SIGKILL"), timeoutMs);
	try {
		const lines = createInterface({ input: pi.stdout });
		let onLine: (event: any) => void = () => {};
		lines.on("line", (line) => onLine(JSON.parse(line)));
		const exited = new Promise<never>((_, reject) => pi.once("exit", () => reject(new Error("pi exited"))));
		const ready = new Promise<void>((resolve) => {
			onLine = (event) => event.type === "response" && event.id === "ready" && resolve();
		});
		pi.stdin.write(`${JSON.stringify({ type: "get_state", id: "ready" })}\n`);
		await Promise.race([ready, exited]);
		// Started and idle (its start-up work done), as a pooled pi would be.
		for (let before = treeCpuSeconds(pi.pid as number); ; ) {
			await sleep(250);
			const after = treeCpuSeconds(pi.pid as number);
			if (after - before <= 0.0125) break;
			before = after;
		}
		const clock = deltaClock();
		const settled = new Promise<void>((resolve) => {
			onLine = (event) => {
				if (event.type === "message_update" && event.assistantMessageEvent?.type === "text_delta")
					clock.delta(event.assistantMessageEvent.delta);
				else if (event.type === "agent_settled") resolve();
			};
		});
		pi.stdin.write(`${JSON.stringify({ type: "prompt", id: "p", message: `tokens: ${tokens}` })}\n`);
		await Promise.race([settled, exited]);
		return clock.done();
	} finally {
		clearTimeout(timer);
		pi.stdin.end();
		if (pi.exitCode === null && pi.signalCode === null) {
			const gone = new Promise((resolve) => pi.once("exit", resolve));
			pi.kill("SIGTERM");
			await Promise.race([gone, sleep(5000)]);
			pi.kill("SIGKILL");
		}
		rmSync(agentDir, { recursive: true, force: true });
	}
}
