import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Session, type SessionLimits } from "../../src/sessions/session/session.ts";
import { fixtures, sleep, until } from "../helpers/gateway.ts";

const limits: SessionLimits = {
	maxQueued: 5,
	commandTimeoutMs: 300,
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
async function start(overrides: Partial<SessionLimits> = {}): Promise<Session> {
	const session = new Session({
		id: "ses_test",
		cwd: process.cwd(),
		persist: false,
		limits: { ...limits, ...overrides },
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

describe("the per-session queue", () => {
	it("sends queued commands one at a time, in arrival order", async () => {
		const session = await start();
		const names = ["a", "b", "c", "d", "e"];
		const responses = await Promise.all(names.map((name) => session.request({ type: "set_session_name", name })));
		expect(responses.map((r) => (r.data as { name: string }).name)).toEqual(names);
		// Each reached pi only after the previous one was answered.
		expect(responses.map((r) => (r.data as { unansweredOnArrival: number }).unansweredOnArrival)).toEqual([
			0, 0, 0, 0, 0,
		]);
		const ids = responses.map((r) => r.id);
		expect(new Set(ids).size).toBe(5);
		expect(ids.every((id) => /^gw_[0-9a-z]+$/.test(id as string))).toBe(true);
	});

	it("lets reads and controls pass a stuck queued command", async () => {
		const session = await start({ commandTimeoutMs: 2_000 });
		const stuck = session.request({ type: "hang" });
		stuck.catch(() => {});
		await until(() => session.queueDepth === 1);
		const read = await session.request({ type: "get_state" });
		expect(read.success).toBe(true);
		const control = await session.request({ type: "abort_bash" });
		expect(control.success).toBe(true);
		expect(session.queueDepth).toBe(1);
	});

	it("answers 429 past the bound and 504 at the deadline", async () => {
		const session = await start({ maxQueued: 2, commandTimeoutMs: 200 });
		const first = session.request({ type: "hang" });
		const second = session.request({ type: "hang" });
		await expect(session.request({ type: "hang" })).rejects.toMatchObject({ status: 429, code: "queue_full" });
		await expect(first).rejects.toMatchObject({ status: 504, code: "pi_timeout" });
		await expect(second).rejects.toMatchObject({ status: 504 });
	});

	it("stops the deadline while a dialog waits for an answer", async () => {
		const session = await start({ commandTimeoutMs: 500 });
		const held = session.request({ type: "dialog" });
		await until(() => session.approvals.list("pending").length === 1);
		await sleep(800); // well past the deadline, but a dialog is open
		const [approval] = session.approvals.list("pending");
		expect(approval?.method).toBe("confirm");
		expect(session.status).toBe("waiting");
		session.approvals.answer(approval?.id as string, { confirmed: true });
		const response = await held;
		expect(response.data).toEqual({ confirmed: true });
		expect(session.status).toBe("idle");
	});

	it("fails pending commands at once with 502 when pi dies", async () => {
		const session = await start({ commandTimeoutMs: 10_000 });
		const stuck = session.request({ type: "hang" });
		session.kill("SIGKILL");
		// 502 pi_crashed, not the 504 of its 10 s deadline: it failed when pi died.
		await expect(stuck).rejects.toMatchObject({ status: 502, code: "pi_crashed" });
		expect(session.status).toBe("crashed");
		await expect(session.request({ type: "get_state" })).rejects.toMatchObject({ status: 502 });
	});
});
