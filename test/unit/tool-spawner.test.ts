import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { threadId } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayError } from "../../src/shared/errors.ts";
import { runToolOffLoop } from "../../src/workspace/tool-spawner.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-gateway-spawner-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const job = (args: string[], extra: { timeoutMs?: number; maxBytes?: number } = {}) => ({
	confine: undefined,
	tool: { command: "sh", args: ["-c", ...args], folder: dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
	name: "sh",
	timeoutMs: extra.timeoutMs ?? 10_000,
	maxBytes: extra.maxBytes ?? 1024,
});

describe("bookkeeping tools run from a thread of their own", () => {
	it("spawns off the event loop's thread and answers with the tool's output", async () => {
		const result = await runToolOffLoop(job(["printf hello; printf oops >&2"]));
		expect(Buffer.from(result.out).toString()).toBe("hello");
		expect(result.stderr).toBe("oops");
		expect(result.thread).not.toBe(threadId);
	});

	it("keeps the tool's failures, cut and deadline as they were", async () => {
		await expect(runToolOffLoop(job(["exit 3"]))).rejects.toThrow(/sh failed \(3\)/);
		const cut = await runToolOffLoop(job(["head -c 5000 /dev/zero"], { maxBytes: 100 }));
		expect([cut.cut, cut.out.length]).toEqual([true, 100]);
		await expect(runToolOffLoop(job(["exec sleep 5"], { timeoutMs: 200 }))).rejects.toThrow(/took longer than 200 ms/);
	});

	it("keeps a refused folder the caller's 409 across the thread", async () => {
		const error = await runToolOffLoop({
			...job(["true"]),
			confine: { sandbox: true, hide: [], cover: [] },
			tool: { ...job(["true"]).tool, folder: join(dir, "missing") },
		}).catch((e) => e);
		expect(error).toBeInstanceOf(GatewayError);
		expect([error.status, error.code]).toEqual([409, "folder_replaced"]);
	});

	it("does not keep a process from exiting: a started, idle thread lets node end (openapi.ts --check hung)", async () => {
		const script = join(dir, "exits.ts");
		const spawner = resolve(import.meta.dirname, "../../src/workspace/tool-spawner.ts");
		writeFileSync(
			script,
			`import { warmToolThread } from ${JSON.stringify(spawner)};\nwarmToolThread();\nconsole.log("done");\n`,
		);
		const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 20_000 });
		expect(stdout.trim()).toBe("done");
	});
});
