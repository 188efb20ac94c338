import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";
import { buildSession, type SessionHost } from "../../src/sessions/registry/session-factory.ts";
import type { SessionLimits } from "../../src/sessions/session/session.ts";
import type { GatewayError } from "../../src/shared/errors.ts";

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

let root: string;
beforeAll(() => {
	root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-session-guard-")));
	for (const dir of ["ws", "data/pi-sessions/own", "data/pi-sessions/other"])
		mkdirSync(join(root, dir), { recursive: true });
	for (const file of ["own/s.jsonl", "other/s.jsonl"]) writeFileSync(join(root, "data/pi-sessions", file), "");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const refusal = async (promise: Promise<unknown>) => {
	const error = (await promise.then(
		() => undefined,
		(e: unknown) => e,
	)) as GatewayError | undefined;
	return error && { status: error.status, code: error.code, detail: error.message };
};

describe("a session's guard", () => {
	it("checks the session it is handed, asking the registry for nothing (one lookup per command: the route's)", async () => {
		const config = parseConfig({ workspaceRoot: join(root, "ws"), dataDir: join(root, "data") });
		let lookups = 0;
		// An older host also offered `registered(id)`, which the guard called three times per command.
		const host = {
			config,
			logger: pino({ level: "silent" }),
			dialect: "current",
			limits: () => limits,
			closing: () => false,
			registered: () => {
				lookups++;
				return undefined;
			},
			resume: async () => {},
			quietDialog: () => undefined,
		} as unknown as SessionHost;
		const session = buildSession(host, "ses_guarded", {} as never, join(root, "ws"));
		session.piState.sessionFile = join(root, "data/pi-sessions/own/s.jsonl");
		session.budget.limits = { maxTokens: 10 };
		session.budget.usedTokens = 11;

		expect(await refusal(session.request({ type: "prompt", message: "hi" }))).toMatchObject({
			status: 409,
			code: "budget_exhausted",
		});
		// Its own folder is the one its own file lies in.
		expect(await refusal(session.request({ type: "switch_session", sessionPath: "../other/s.jsonl" }))).toEqual({
			status: 403,
			code: "session_file_not_own",
			detail: `sessionPath must name a file in this session's own folder ${join(root, "data/pi-sessions/own")}`,
		});
		expect(lookups).toBe(0);
	});
});
