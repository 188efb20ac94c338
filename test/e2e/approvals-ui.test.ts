import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fixtures, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Fire-and-forget extension UI calls on real pi, one at a time, each read back from GET …/ui.
let gw: TestGateway;
let id: string;

beforeAll(async () => {
	gw = await startTestGateway({
		extensions: { dialogs: join(fixtures, "extensions/dialogs.ts") },
		maxNotifications: 3,
	});
	id = await gw.session({ extensions: ["dialogs"] });
});
afterAll(() => gw?.stop());

/** Makes one ctx.ui call in pi; its response comes after the call's line, so /ui is current. */
async function call(method: string, ...args: unknown[]) {
	const res = await gw.api(`/v1/sessions/${id}/prompt`, {
		method: "POST",
		json: { message: `/ui ${method} ${JSON.stringify(args)}` },
	});
	expect(res.body.disposition).toBe("handled");
	const ui = (await gw.api(`/v1/sessions/${id}/ui`)).body;
	return {
		...ui,
		notifications: ui.notifications.map((n: { message: string; level: string }) => [n.message, n.level]),
	};
}

it("starts empty and follows each call", async () => {
	const empty = { title: null, statuses: {}, widgets: {}, editorText: null, notifications: [] };
	const ui = await gw.api(`/v1/sessions/${id}/ui`);
	expect(ui.status).toBe(200);
	expect(ui.body).toEqual(empty);

	expect(await call("setTitle", "pi — demo")).toEqual({ ...empty, title: "pi — demo" });
	expect((await call("setStatus", "build", "compiling")).statuses).toEqual({ build: "compiling" });
	expect((await call("setStatus", "lint", "ok")).statuses).toEqual({ build: "compiling", lint: "ok" });
	expect((await call("setStatus", "build", "done")).statuses).toEqual({ build: "done", lint: "ok" });
	expect((await call("setStatus", "build")).statuses).toEqual({ lint: "ok" });

	expect((await call("setWidget", "todo", ["- a", "- b"])).widgets).toEqual({
		todo: { lines: ["- a", "- b"], placement: "aboveEditor" },
	});
	expect((await call("setWidget", "foot", ["x"], { placement: "belowEditor" })).widgets).toEqual({
		todo: { lines: ["- a", "- b"], placement: "aboveEditor" },
		foot: { lines: ["x"], placement: "belowEditor" },
	});
	expect((await call("setWidget", "todo")).widgets).toEqual({ foot: { lines: ["x"], placement: "belowEditor" } });

	expect((await call("setEditorText", "draft\nsecond line")).editorText).toBe("draft\nsecond line");
	// pasteToEditor falls back to set_editor_text in RPC mode.
	expect((await call("pasteToEditor", "pasted")).editorText).toBe("pasted");

	expect((await call("notify", "hello")).notifications).toEqual([["hello", "info"]]);
	expect((await call("notify", "careful", "warning")).notifications).toEqual([
		["hello", "info"],
		["careful", "warning"],
	]);
	expect((await call("notify", "broken", "error")).notifications).toEqual([
		["hello", "info"],
		["careful", "warning"],
		["broken", "error"],
	]);
	// Only the last maxNotifications (3 here) are kept.
	const last = await call("notify", "fourth", "info");
	expect(last).toEqual({
		title: "pi — demo",
		statuses: { lint: "ok" },
		widgets: { foot: { lines: ["x"], placement: "belowEditor" } },
		editorText: "pasted",
		notifications: [
			["careful", "warning"],
			["broken", "error"],
			["fourth", "info"],
		],
	});
	const { body } = await gw.api(`/v1/sessions/${id}/ui`);
	for (const n of body.notifications) expect(new Date(n.at).toISOString()).toBe(n.at);
	// None of these is a dialog: nothing to approve, the session never waited.
	expect((await gw.api(`/v1/sessions/${id}/approvals`)).body.approvals).toEqual([]);
	expect((await gw.api("/v1/sessions/ses_nope/ui")).status).toBe(404);
});
