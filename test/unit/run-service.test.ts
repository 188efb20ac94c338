import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { LoggedEvent } from "../../src/sessions/events/index.ts";
import { type CommandStreamSink, prepareRun } from "../../src/sessions/runs/index.ts";
import { Session, type SessionLimits } from "../../src/sessions/session/session.ts";
import { fixtures } from "../helpers/gateway.ts";

/**
 * The run service answers without HTTP (issue 43 item 2): what became of a run command is a
 * neutral result (accepted, held by a dialog, pending, settled) or a stream into a sink, and
 * http/ only maps it. echo-pi answers a prompt at once with no run, and holds a `dialog`
 * command's answer behind a confirm dialog.
 */
const limits: SessionLimits = {
	maxQueued: 5,
	commandTimeoutMs: 2_000,
	startupTimeoutMs: 5_000,
	shutdownGraceMs: 500,
	eventLogMaxEvents: 1_000,
	eventLogMaxBytes: 1 << 20,
	maxLineChars: 1 << 20,
	stderrTailBytes: 1024,
	approvalTimeoutMs: 0,
	maxPendingDialogs: 64,
	maxNotifications: 10,
};

const sessions: Session[] = [];
async function start(): Promise<Session> {
	const session = new Session({
		id: "ses_runs",
		cwd: process.cwd(),
		persist: false,
		limits,
		logger: pino({ level: "silent" }),
	});
	sessions.push(session);
	await session.start({
		command: process.execPath,
		args: [join(fixtures, "echo-pi.mjs"), "--mode", "rpc"],
		env: process.env,
	});
	return session;
}

afterEach(async () => {
	await Promise.all(sessions.splice(0).map((s) => s.stop()));
});

describe("the run service", () => {
	it("accept: pi's answer, with the run's id and where its events start", async () => {
		const session = await start();
		const after = session.events.lastSeq;
		const run = prepareRun(session, "prompt", { message: "hi" });
		expect(await run.accept()).toEqual({
			kind: "accepted",
			runId: run.command.id,
			after,
			disposition: "queued",
			waited: false,
		});
	});

	it("accept: a dialog that opens before pi's answer holds it, and says which", async () => {
		const session = await start();
		const answer = await prepareRun(session, "dialog", {}).accept();
		expect(answer).toMatchObject({ kind: "held", waited: false });
		const approvals = answer.kind === "held" ? answer.approvals : [];
		expect(approvals.map((a) => a.id)).toEqual(session.approvals.list("pending").map((a) => a.id));
		expect(approvals).toHaveLength(1);
	});

	it("wait: a queued command with no run to join ends at pi's answer (idle)", async () => {
		const session = await start();
		const run = prepareRun(session, "prompt", { message: "hi" });
		expect(await run.wait(5_000, new AbortController().signal)).toMatchObject({
			kind: "accepted",
			runId: run.command.id,
			disposition: "queued",
			waited: true,
		});
	});

	it("stream: open first, then the run's events in log order, then the end", async () => {
		const session = await start();
		const seen: string[] = [];
		let ended!: () => void;
		const end = new Promise<void>((resolve) => {
			ended = resolve;
		});
		const sink: CommandStreamSink = {
			open: (after, commandId) => seen.push(`open ${after} ${commandId}`),
			event: (event: LoggedEvent) => seen.push(event.type),
			end: () => {
				seen.push("end");
				ended();
			},
			failed: (error) => seen.push(`failed ${error.code}`),
		};
		const after = session.events.lastSeq;
		const run = prepareRun(session, "prompt", { message: "hi" });
		const release = await run.stream(sink);
		await end;
		expect(seen).toEqual([`open ${after} ${run.command.id}`, "response", "end"]);
		expect(session.events.followers).toBe(0);
		release();
		expect(session.events.followers).toBe(0);
	});
});
