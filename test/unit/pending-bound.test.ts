import { describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/config.ts";
import type { DialogRequest } from "../../src/pi/protocol.ts";
import { Approvals } from "../../src/sessions/dialogs/approvals.ts";
import { ToolCalls } from "../../src/sessions/dialogs/client-tool-calls.ts";

// Issue 41 item 2: nothing bounded how many dialogs or client tool calls one session's agent (an
// extension) could hold pending, each kept in the gateway's memory and listed in everyone's inbox
// walk. Past --max-pending-dialogs a new one is refused as it opens: never pending, pi answered at once.

type Told = { event: string; id: string; status: string; by: string | null; response?: Record<string, unknown> };

const confirm = (id: string) =>
	({ type: "extension_ui_request", id, method: "confirm", title: `title ${id}`, message: "?" }) as DialogRequest;

describe("the bound on pending dialogs and client tool calls, per session", () => {
	it("is 64 by default", () => {
		expect(ConfigSchema.parse({}).maxPendingDialogs).toBe(64);
	});

	it("dialogs past the bound are cancelled at once, with the reason, and pi is told: never pending, never requested", () => {
		const told: Told[] = [];
		const approvals = new Approvals(
			"ses_1",
			{
				requested: (a) => told.push({ event: "requested", id: a.id, status: a.status, by: a.resolvedBy }),
				resolved: (a, response) =>
					told.push({ event: "resolved", id: a.id, status: a.status, by: a.resolvedBy, response }),
			},
			0,
			3,
		);
		for (let i = 0; i < 5; i++) approvals.open(confirm(`d${i}`));
		expect(approvals.pendingCount).toBe(3);
		expect(approvals.list("pending").map((a) => a.id)).toEqual(["d0", "d1", "d2"]);
		expect(told.filter((t) => t.event === "resolved")).toEqual(
			["d3", "d4"].map((id) => ({
				event: "resolved",
				id,
				status: "cancelled",
				by: "gateway-limit",
				response: { type: "extension_ui_response", id, cancelled: true },
			})),
		);
		expect(told.filter((t) => t.event === "requested").map((t) => t.id)).toEqual(["d0", "d1", "d2"]);
		expect(approvals.get("d3")).toMatchObject({
			status: "cancelled",
			resolvedBy: "gateway-limit",
			expiresAt: null,
			note: "Refused: this session already has 3 dialogs pending (--max-pending-dialogs)",
		});
		expect(() => approvals.answer("d3", { confirmed: true })).toThrow(/cancelled \(gateway-limit\)/);
		// An answer makes room again.
		approvals.answer("d0", { confirmed: true });
		approvals.open(confirm("d5"));
		expect(approvals.list("pending").map((a) => a.id)).toEqual(["d1", "d2", "d5"]);
	});

	it("refused dialogs are settled ones: a flood keeps the session's list bounded", () => {
		const approvals = new Approvals("ses_1", { requested: () => {}, resolved: () => {} }, 0, 2);
		for (let i = 0; i < 5000; i++) approvals.open(confirm(`d${i}`));
		expect(approvals.pendingCount).toBe(2);
		// The 1000 settled ones a session keeps, its pending ones, and the one refused last.
		expect(approvals.list().length).toBe(1003);
	});

	it("client tool calls past the bound get an error result that says why, at once", () => {
		const told: Told[] = [];
		const calls = new ToolCalls(
			"ses_1",
			{
				requested: (c) => told.push({ event: "requested", id: c.id, status: c.status, by: c.resolvedBy }),
				resolved: (c, response) =>
					told.push({ event: "resolved", id: c.id, status: c.status, by: c.resolvedBy, response }),
			},
			0,
			2,
		);
		for (let i = 0; i < 4; i++)
			calls.open(`dialog${i}`, { toolCallId: `call${i}`, name: "lookup", arguments: {} }, "gw_1");
		expect(calls.pendingCount).toBe(2);
		const why = "Refused: this session already has 2 client tool calls pending (--max-pending-dialogs)";
		expect(told.filter((t) => t.event === "resolved")).toEqual(
			[2, 3].map((i) => ({
				event: "resolved",
				id: `call${i}`,
				status: "cancelled",
				by: "gateway-limit",
				response: {
					type: "extension_ui_response",
					id: `dialog${i}`,
					value: JSON.stringify({ output: why, isError: true }),
				},
			})),
		);
		expect(told.filter((t) => t.event === "requested").map((t) => t.id)).toEqual(["call0", "call1"]);
		expect(calls.get("call3")).toMatchObject({ status: "cancelled", result: { output: why, isError: true } });
	});
});
