import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { DialogRequest, UiRequest } from "../../src/pi/protocol.ts";
import { type Approval, ApprovalAnswer, Approvals, pageOf } from "../../src/sessions/dialogs/approvals.ts";
import { applyUiRequest, emptyUiState } from "../../src/sessions/session/ui-state.ts";
import { GatewayError } from "../../src/shared/errors.ts";

type Told = { event: "requested" | "resolved"; id: string; status: string; response?: Record<string, unknown> };

function setup(policyMs = 0) {
	const told: Told[] = [];
	const approvals = new Approvals(
		"ses_1",
		{
			requested: (a) => told.push({ event: "requested", id: a.id, status: a.status }),
			resolved: (a, response) => told.push({ event: "resolved", id: a.id, status: a.status, response }),
		},
		policyMs,
	);
	return { approvals, told };
}

// Loose on purpose: pi passes an extension's values through unchecked, so the gateway must cope
// with requests its types call impossible (missing fields, unknown methods).
const request = (id: string, method: string, fields: Record<string, unknown> = {}) =>
	({ type: "extension_ui_request", id, method, title: `title ${id}`, ...fields }) as DialogRequest;

/** The GatewayError a call throws, as status + code. */
function failure(fn: () => unknown): { status: number; code: string } {
	try {
		fn();
	} catch (error) {
		if (error instanceof GatewayError) return { status: error.status, code: error.code };
		throw error;
	}
	throw new Error("expected a GatewayError");
}

beforeEach(() => {
	vi.useFakeTimers();
	vi.setSystemTime(new Date("2030-01-01T00:00:00.000Z"));
});
afterEach(() => vi.useRealTimers());

describe("Approvals", () => {
	it("keeps only the fields of each dialog kind", () => {
		const { approvals } = setup();
		const fields = { message: "m", options: ["a"], placeholder: "p", prefill: "f" };
		const kinds = ["confirm", "select", "input", "editor"].map((m) => approvals.open(request(m, m, fields)));
		const picked = kinds.map(({ method, message, options, placeholder, prefill }) => ({
			method,
			message,
			options,
			placeholder,
			prefill,
		}));
		expect(picked).toEqual([
			{ method: "confirm", message: "m" },
			{ method: "select", options: ["a"] },
			{ method: "input", placeholder: "p" },
			{ method: "editor", prefill: "f" },
		]);
		expect(kinds[0]).toMatchObject({
			id: "confirm",
			sessionId: "ses_1",
			title: "title confirm",
			createdAt: "2030-01-01T00:00:00.000Z",
			expiresAt: null,
			status: "pending",
			answer: null,
			resolvedAt: null,
			resolvedBy: null,
		});
		expect(approvals.pendingCount).toBe(4);
	});

	it("answers with the right shape and tells pi exactly that", () => {
		const { approvals, told } = setup();
		approvals.open(request("c", "confirm"));
		approvals.open(request("s", "select", { options: ["Allow", "Block"] }));
		approvals.open(request("i", "input"));
		approvals.open(request("e", "editor"));
		expect(failure(() => approvals.answer("c", { value: "yes" }))).toEqual({
			status: 422,
			code: "approval_answer_mismatch",
		});
		expect(failure(() => approvals.answer("s", { confirmed: true }))).toMatchObject({ status: 422 });
		expect(failure(() => approvals.answer("s", { value: "allow" }))).toMatchObject({ status: 422 });
		expect(approvals.pendingCount).toBe(4);

		vi.setSystemTime(new Date("2030-01-01T00:00:05.000Z"));
		expect(approvals.answer("c", { confirmed: false, by: "bob" })).toMatchObject({
			status: "answered",
			answer: { confirmed: false },
			resolvedAt: "2030-01-01T00:00:05.000Z",
			resolvedBy: "bob",
		});
		approvals.answer("s", { value: "Block" });
		approvals.answer("i", { value: "" });
		approvals.answer("e", { cancelled: true });
		expect(told.filter((t) => t.event === "resolved")).toEqual([
			{
				event: "resolved",
				id: "c",
				status: "answered",
				response: { type: "extension_ui_response", id: "c", confirmed: false },
			},
			{
				event: "resolved",
				id: "s",
				status: "answered",
				response: { type: "extension_ui_response", id: "s", value: "Block" },
			},
			{
				event: "resolved",
				id: "i",
				status: "answered",
				response: { type: "extension_ui_response", id: "i", value: "" },
			},
			{
				event: "resolved",
				id: "e",
				status: "cancelled",
				response: { type: "extension_ui_response", id: "e", cancelled: true },
			},
		]);
		expect(approvals.get("s").resolvedBy).toBe("api");
		expect(approvals.pendingCount).toBe(0);
	});

	it("lets one answer win: the rest get 409 (answered) or 410 (nobody answered)", () => {
		const { approvals } = setup();
		approvals.open(request("a", "confirm"));
		approvals.open(request("b", "input"));
		approvals.answer("a", { cancelled: true });
		expect(failure(() => approvals.answer("a", { confirmed: true }))).toEqual({
			status: 409,
			code: "approval_already_answered",
		});
		approvals.cancelAll("gateway-abort");
		expect(approvals.get("b")).toMatchObject({ status: "cancelled", answer: null, resolvedBy: "gateway-abort" });
		expect(failure(() => approvals.answer("b", { value: "x" }))).toEqual({ status: 410, code: "approval_gone" });
		expect(failure(() => approvals.answer("nope", { value: "x" }))).toEqual({
			status: 404,
			code: "approval_not_found",
		});
	});

	it("expires with pi's timeout a little early and dismisses the dialog in pi", () => {
		const { approvals, told } = setup();
		const a = approvals.open(request("t", "confirm", { timeout: 2000 }));
		expect(a.expiresAt).toBe("2030-01-01T00:00:01.900Z");
		vi.advanceTimersByTime(1899);
		expect(a.status).toBe("pending");
		vi.advanceTimersByTime(1);
		expect(a).toMatchObject({ status: "expired", answer: null, resolvedBy: "pi-timeout" });
		expect(told.at(-1)?.response).toEqual({ type: "extension_ui_response", id: "t", cancelled: true });
		expect(failure(() => approvals.answer("t", { confirmed: true }))).toMatchObject({ status: 410 });
	});

	it("cancels on the gateway's policy unless pi's own timeout comes first", () => {
		const { approvals } = setup(1000);
		const policed = approvals.open(request("p", "editor"));
		const timed = approvals.open(request("t", "select", { options: ["a"], timeout: 500 }));
		const longer = approvals.open(request("l", "select", { options: ["a"], timeout: 5000 }));
		expect([policed.expiresAt, timed.expiresAt, longer.expiresAt]).toEqual([
			"2030-01-01T00:00:01.000Z",
			"2030-01-01T00:00:00.450Z",
			"2030-01-01T00:00:01.000Z",
		]);
		vi.advanceTimersByTime(1000);
		expect([policed, timed, longer].map((a) => [a.status, a.resolvedBy])).toEqual([
			["cancelled", "gateway-policy"],
			["expired", "pi-timeout"],
			["cancelled", "gateway-policy"],
		]);
	});

	it("an answer stops the clock", () => {
		const { approvals, told } = setup(1000);
		approvals.open(request("a", "confirm"));
		approvals.answer("a", { confirmed: true });
		vi.advanceTimersByTime(5000);
		expect(approvals.get("a").status).toBe("answered");
		expect(told.map((t) => t.event)).toEqual(["requested", "resolved"]);
	});

	it("abandons pending dialogs without telling pi when it is gone", () => {
		const { approvals, told } = setup();
		approvals.open(request("a", "confirm"));
		approvals.open(request("b", "confirm"));
		approvals.answer("a", { confirmed: true });
		approvals.abandonAll();
		expect(approvals.get("b")).toMatchObject({ status: "cancelled", answer: null, resolvedBy: "pi-exit" });
		expect(told.at(-1)).toEqual({ event: "resolved", id: "b", status: "cancelled", response: undefined });
		expect(approvals.get("a").status).toBe("answered");
	});

	it("keeps 1000 settled approvals and every pending one", () => {
		const { approvals } = setup();
		approvals.open(request("first", "confirm"));
		for (let i = 0; i < 1001; i++) {
			approvals.open(request(`n${i}`, "input"));
			approvals.answer(`n${i}`, { value: "x" });
		}
		approvals.open(request("last", "confirm"));
		expect(approvals.list().length).toBe(1002);
		expect(approvals.list()[0]?.id).toBe("first");
		expect(approvals.list()[1]?.id).toBe("n1");
		expect(approvals.list("pending").map((a) => a.id)).toEqual(["first", "last"]);
	});

	it("validates answers: exactly one of confirmed, value, cancelled: true", () => {
		expect(ApprovalAnswer.safeParse({ confirmed: true, by: "a" }).success).toBe(true);
		expect(ApprovalAnswer.safeParse({ value: "" }).success).toBe(true);
		expect(ApprovalAnswer.safeParse({}).success).toBe(false);
		expect(ApprovalAnswer.safeParse({ cancelled: false }).success).toBe(false);
		expect(ApprovalAnswer.safeParse({ value: "a", confirmed: true }).success).toBe(false);
		expect(ApprovalAnswer.safeParse({ value: 1 }).success).toBe(false);
		expect(ApprovalAnswer.safeParse({ confirmed: true, by: "" }).success).toBe(false);
	});
});

describe("pageOf", () => {
	it("orders across sessions by creation and pages with a cursor", () => {
		const one = setup().approvals;
		const two = new Approvals("ses_2", { requested() {}, resolved() {} });
		one.open(request("a", "confirm"));
		two.open(request("b", "confirm"));
		one.open(request("c", "confirm"));
		const all: Approval[] = [...one.list(), ...two.list()];
		const first = pageOf(all, 0, 2);
		expect(first.approvals.map((a) => a.id)).toEqual(["a", "b"]);
		expect(first.hasMore).toBe(true);
		const second = pageOf(all, Number(first.nextCursor), 2);
		expect(second.approvals.map((a) => a.id)).toEqual(["c"]);
		expect(second.hasMore).toBe(false);
		const empty = pageOf(all, Number(second.nextCursor), 2);
		expect(empty).toEqual({ approvals: [], nextCursor: second.nextCursor, hasMore: false });
	});
});

describe("UI state", () => {
	const apply = (state: ReturnType<typeof emptyUiState>, method: string, fields: Record<string, unknown>, max = 3) =>
		applyUiRequest(state, { type: "extension_ui_request", id: "x", method, ...fields } as UiRequest, max);

	it("tracks statuses and widgets by key, cleared when absent", () => {
		const state = emptyUiState();
		apply(state, "setStatus", { statusKey: "a", statusText: "one" });
		apply(state, "setStatus", { statusKey: "__proto__", statusText: "two" });
		apply(state, "setWidget", { widgetKey: "w", widgetLines: ["l1"], widgetPlacement: "belowEditor" });
		apply(state, "setWidget", { widgetKey: "v", widgetLines: [] });
		expect(JSON.parse(JSON.stringify(state))).toEqual({
			title: null,
			statuses: JSON.parse('{"a":"one","__proto__":"two"}'),
			widgets: { w: { lines: ["l1"], placement: "belowEditor" }, v: { lines: [], placement: "aboveEditor" } },
			editorText: null,
			notifications: [],
		});
		apply(state, "setStatus", { statusKey: "a" });
		apply(state, "setWidget", { widgetKey: "w" });
		expect(Object.keys(state.statuses)).toEqual(["__proto__"]);
		expect(Object.keys(state.widgets)).toEqual(["v"]);
	});

	it("keeps the last notifications with their level, title and editor text", () => {
		const state = emptyUiState();
		for (const [message, notifyType] of [
			["1", undefined],
			["2", "warning"],
			["3", "error"],
			["4", "bogus"],
		] as const)
			apply(state, "notify", { message, notifyType: notifyType as never });
		apply(state, "setTitle", { title: "T" });
		apply(state, "set_editor_text", { text: "draft" });
		expect(state.notifications.map(({ message, level }) => [message, level])).toEqual([
			["2", "warning"],
			["3", "error"],
			["4", "info"],
		]);
		expect(state.notifications[0]?.at).toBe("2030-01-01T00:00:00.000Z");
		expect([state.title, state.editorText]).toEqual(["T", "draft"]);
	});
});
