import { afterEach, describe, expect, it, vi } from "vitest";
import { GatewayError, type PiGateway } from "../../src/client/index.ts";
import type { ChatPlan } from "../../src/http/routes/openai/chat-input.ts";
import { ChatSessions, toolPauseMs } from "../../src/http/routes/openai/chat-run.ts";

// A paused completion's session (a run waiting for the client's tool results) is aborted and
// deleted after toolPauseMs unless its results come. A request whose answer is refused (bob, who
// may read alice's shared session but not answer its calls) must not call that off: it did, and
// her run then waited for ever, its pi holding one of her live slots.
afterEach(() => {
	vi.useRealTimers();
});

const plan = (): ChatPlan => ({
	resume: { sessionId: "ses_shared", results: new Map([["c1", "42"]]) },
	create: {},
	prompt: { message: "" },
	toolNames: new Set(),
	store: false,
});

/** A gateway that shows one pending call of ses_shared; `answer` is what answering it does. */
function gateway(answer: () => Promise<unknown>) {
	const aborted: string[] = [];
	const events = {
		next: async () => ({ value: { type: "stream_open" }, done: false }),
		return: async () => ({ value: undefined, done: true }),
	};
	const gw = {
		getSession: async (id: string) => ({ id, model: { provider: "p", id: "m" } }),
		events: () => ({ [Symbol.asyncIterator]: () => events }),
		toolCalls: { list: async () => [{ id: "c1", runId: "run_1" }], answer },
		abort: async (id: string) => void aborted.push(id),
		request: async () => undefined,
	};
	return { gw: gw as unknown as PiGateway, aborted };
}

describe("ChatSessions' pause", () => {
	it("is not called off by a resume whose answer is refused", async () => {
		vi.useFakeTimers();
		const chats = new ChatSessions();
		const alice = gateway(async () => undefined);
		const run = await chats.start(alice.gw, plan(), new AbortController().signal);
		run.settle("paused");

		const refused = new GatewayError({
			status: 404,
			code: "session_not_found",
			detail: "No session ses_shared",
		} as never);
		const bob = gateway(() => Promise.reject(refused));
		await expect(chats.start(bob.gw, plan(), new AbortController().signal)).rejects.toMatchObject({ status: 404 });

		await vi.advanceTimersByTimeAsync(toolPauseMs);
		expect(alice.aborted).toEqual(["ses_shared"]);
		expect(bob.aborted).toEqual([]);
	});
});
