import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PiGateway } from "../../src/client/index.ts";
import { until } from "../helpers/gateway.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { freePort, hasCommand } from "../helpers/host.ts";
import { type Frame, parseText } from "../helpers/sse.ts";

// Issue 30, item 3: a gateway SIGKILLed during a run (`slow: 60`) and started again on the same
// data dir. The run no longer exists; a stream resumed with Last-Event-ID gets a `gap` frame and,
// right after it, the run's end (`run_lost` with the run's id, then `session_exit`), and it ends:
// curl exits by itself, the TypeScript and Python clients raise a clear error. `gap.lost` is not
// the 100,000 the event numbers jump by after an unclean stop: the loss cannot be counted, so it is absent.

const repo = resolve(import.meta.dirname, "../..");
const token = "unclean-stop-token-0123456789";
const python = (() => {
	try {
		execFileSync("python3", ["-c", "import sys; assert sys.version_info >= (3, 9)"], { stdio: "ignore" });
		return true;
	} catch {
		return false;
	}
})();

const pythonClient = `
import json, os, sys
from pi_gateway import PiGateway
gw = PiGateway(os.environ["GW"], os.environ["TOKEN"], retry_delay=0.25, max_reconnects=40)
try:
    for event in gw.prompt_stream(sys.argv[1], "slow: 60"):
        print(json.dumps({"event": event}), flush=True)
    print(json.dumps({"end": True}), flush=True)
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error),
                      "runId": getattr(error, "run_id", None)}), flush=True)
`;

/** The complete frames curl has printed so far (an unfinished last one is not one yet). */
const frames = (text: string): Frame[] => parseText(text);

let root: string;
const gateways: GatewayProcess[] = [];
const children: ChildProcess[] = [];

beforeAll(() => {
	root = mkdtempSync(join(tmpdir(), "pi-gateway-unclean-"));
});
afterAll(() => {
	for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
	killAll(gateways);
	rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasCommand("curl"))("after a SIGKILL of the gateway and a restart on the same data dir", () => {
	it("a stream resumed into the lost run gets gap, then run_lost and session_exit, and ends: curl, the TS client, the Python client", async () => {
		const port = await freePort();
		const first = await launchGateway({ root, port, token });
		gateways.push(first);
		const create = async () => (await first.api("/v1/sessions", { method: "POST", json: {} })).body.id as string;
		const [viaCurl, viaTs, viaPython] = [await create(), await create(), await create()];

		// curl -N follows one run as it happens.
		let curlOut = "";
		const curl = spawn("curl", [
			"-sN",
			"-X",
			"POST",
			`${first.url}/v1/sessions/${viaCurl}/prompt/stream`,
			"-H",
			`authorization: Bearer ${token}`,
			"-H",
			"content-type: application/json",
			"-H",
			"accept: text/event-stream",
			"-d",
			'{"message":"slow: 60"}',
		]);
		children.push(curl);
		curl.stdout.setEncoding("utf8").on("data", (text: string) => {
			curlOut += text;
		});
		const curlExited = new Promise((done) => curl.once("exit", done));

		// The TypeScript client follows another.
		const client = new PiGateway({ baseUrl: first.url, token, reconnect: { delayMs: 250, maxAttempts: 40 } });
		const tsEvents: Record<string, unknown>[] = [];
		let tsRunId: string | undefined;
		const tsDone = (async () => {
			try {
				for await (const event of client.promptStream(viaTs, { message: "slow: 60" })) {
					const e = event as Record<string, unknown>;
					if (e.type === "stream_open") tsRunId = e.runId as string;
					tsEvents.push(e);
				}
				return undefined;
			} catch (error) {
				return error as Error & { runId?: string; sessionId?: string };
			}
		})();

		// The Python client a third.
		let pyOut = "";
		const py = python
			? spawn("python3", ["-c", pythonClient, viaPython], {
					cwd: repo,
					env: {
						...process.env,
						PYTHONPATH: join(repo, "clients/python/src"),
						PYTHONDONTWRITEBYTECODE: "1",
						GW: first.url,
						TOKEN: token,
					},
				})
			: undefined;
		if (py) {
			children.push(py);
			py.stdout.setEncoding("utf8").on("data", (text: string) => {
				pyOut += text;
			});
		}
		const pyLines = () =>
			pyOut
				.split("\n")
				.filter(Boolean)
				.map((line) => JSON.parse(line) as Record<string, any>);
		const deltas = (events: Record<string, any>[]) =>
			events.filter((e) => e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta").length;

		// Well into each run (the periodic flush has written some of it, not all), the gateway is killed.
		await until(
			() =>
				deltas(frames(curlOut).map((f) => f.json)) >= 15 &&
				deltas(tsEvents) >= 15 &&
				(!py || deltas(pyLines().map((l) => l.event ?? {})) >= 15),
			30_000,
		);
		first.child.kill("SIGKILL");
		await first.exited;
		await curlExited;
		const before = frames(curlOut);
		const runId = before[0]?.json.runId as string;
		const lastSeen = before.filter((f) => f.id !== undefined).at(-1)?.id as string;
		expect(runId).toMatch(/^gw_\d+$/);
		expect(before.some((f) => f.event === "agent_settled")).toBe(false);

		const second = await launchGateway({ root, port, token });
		gateways.push(second);

		// curl -N resumes with Last-Event-ID, and exits by itself once the stream ended.
		const resumed = spawn("curl", [
			"-sN",
			`${second.url}/v1/sessions/${viaCurl}/events`,
			"-H",
			`authorization: Bearer ${token}`,
			"-H",
			`last-event-id: ${lastSeen}`,
		]);
		children.push(resumed);
		let resumedOut = "";
		resumed.stdout.setEncoding("utf8").on("data", (text: string) => {
			resumedOut += text;
		});
		const code = await Promise.race([
			new Promise((done) => resumed.once("exit", done)),
			new Promise((done) => setTimeout(() => done("still running after 10 s"), 10_000)),
		]);
		expect(code, resumedOut).toBe(0);
		const after = frames(resumedOut);
		expect(after.map((f) => f.event)).toEqual(["stream_open", "gap", "run_lost", "session_exit"]);
		const [, gap, lost, exit] = after as [Frame, Frame, Frame, Frame];
		expect(gap.json).toMatchObject({ type: "gap", sessionId: viaCurl, after: Number(lastSeen) });
		// The event numbers jumped by 100,000; how many events were really lost cannot be known.
		expect(gap.json.lost).toBeUndefined();
		expect(Number(lost.id)).toBe(gap.json.firstAvailable);
		expect(lost.json).toMatchObject({ type: "run_lost", sessionId: viaCurl, runId });
		expect(lost.json.reason).toMatch(/stopped uncleanly/);
		expect(exit.json).toMatchObject({ type: "session_exit", sessionId: viaCurl, reason: "lost", resumable: true });

		// The same POST again with Last-Event-ID (what a retrying SSE library sends, issue 31 item 4):
		// gap, then the run's end, and nothing for pi: the session stays stopped.
		const retried = await second.fetch(`/v1/sessions/${viaCurl}/prompt/stream`, {
			method: "POST",
			headers: { "content-type": "application/json", "last-event-id": lastSeen },
			body: JSON.stringify({ message: "slow: 60" }),
		});
		const retriedFrames = frames(await retried.text());
		expect(retriedFrames.map((f) => f.event)).toEqual(["stream_open", "gap", "run_lost"]);
		expect(retriedFrames[2]?.json).toMatchObject({ type: "run_lost", runId });
		expect((await second.api(`/v1/sessions/${viaCurl}`)).body).toMatchObject({ status: "stopped" });

		// The TypeScript client reconnected by itself and ends its iterator with an error naming the run.
		const tsError = await Promise.race([tsDone, new Promise((done) => setTimeout(() => done("hung"), 15_000))]);
		expect(tsError, JSON.stringify(tsEvents.slice(-4))).toBeInstanceOf(Error);
		const err = tsError as Error & { runId?: string; sessionId?: string };
		expect(err.name).toBe("RunLostError");
		expect(err.runId).toBe(tsRunId);
		expect(err.sessionId).toBe(viaTs);
		expect(err.message).toMatch(new RegExp(`run ${tsRunId} .*was lost`, "i"));
		const tsGap = tsEvents.at(-1) as Record<string, unknown>;
		expect(tsGap).toMatchObject({ type: "gap", sessionId: viaTs });
		expect(tsGap.lost).toBeUndefined();

		if (py) {
			const ended = await until(() => pyLines().find((l) => l.error || l.end), 15_000).catch(() => "hung");
			expect(ended, pyOut).toMatchObject({ error: "RunLost", runId: expect.stringMatching(/^gw_\d+$/) });
			expect((ended as { message: string }).message).toMatch(/was lost/);
			const events = pyLines().filter((l) => l.event);
			expect(events.at(-1)?.event).toMatchObject({ type: "gap", sessionId: viaPython });
			expect(events.at(-1)?.event.lost).toBeUndefined();
		}

		// The sessions are stopped, not gone: a resume continues each conversation.
		const view = await second.api(`/v1/sessions/${viaCurl}`);
		expect(view.body).toMatchObject({ status: "stopped", resumable: true });
		second.child.kill("SIGTERM");
		await second.exited;
	}, 120_000);
});
