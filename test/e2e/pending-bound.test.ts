import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { fixtures, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 41 item 2: nothing bounded the dialogs one session's agent (an extension) holds pending, each
// kept in the gateway's memory and walked by every principal's inbox. Real pi, README's layout, bob's
// key from a keys file, an extension that opens 20 dialogs at once, --max-pending-dialogs 4.
let dir: string;
let bob: string;
let gw: TestGateway;
beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-pending-bound-"));
	const keysFile = join(dir, "keys.json");
	bob = createKey(keysFile, "bob", ["sessions:read", "sessions:write", "approvals:read", "approvals:answer"]).secret;
	const flood = join(fixtures, "extensions/dialog-flood.ts");
	gw = await startTestGateway({ keysFile, extensions: { flood }, maxPendingDialogs: 4 });
});
afterAll(async () => {
	await gw?.stop();
	rmSync(dir, { recursive: true, force: true });
});

const headers = () => ({ authorization: `Bearer ${bob}` });

describe("a session's pending dialogs are bounded", () => {
	it("past --max-pending-dialogs an extension's dialog is refused at once, with the reason in the event stream", async () => {
		const created = await gw.api("/v1/sessions", {
			method: "POST",
			json: { extensions: ["flood"] },
			headers: headers(),
		});
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const events = await gw.fetch(`/v1/sessions/${id}/events?after=${created.body.lastEventId}`, {
			headers: { ...headers(), accept: "text/event-stream" },
		});
		// Until the sixteenth refusal, or (the old code) a fifth dialog opened.
		let refused = 0;
		let requested = 0;
		const frames = collect(
			events,
			(f) =>
				(f.event === "approval_requested" && ++requested > 4) ||
				(f.event === "approval_resolved" && f.json.approval.resolvedBy === "gateway-limit" && ++refused === 16),
		);
		const run = await gw.api(`/v1/sessions/${id}/prompt`, {
			method: "POST",
			json: { message: "/flood 20" },
			headers: headers(),
		});
		expect(run.status).toBe(202);
		const reason = "Refused: this session already has 4 dialogs pending (--max-pending-dialogs)";
		const seen = (await frames).filter((f) => f.event?.startsWith("approval_"));
		expect(seen.filter((f) => f.event === "approval_requested")).toHaveLength(4);
		expect(seen.filter((f) => f.event === "approval_resolved").map((f) => f.json.approval)).toEqual(
			Array.from({ length: 16 }, () =>
				expect.objectContaining({ status: "cancelled", resolvedBy: "gateway-limit", note: reason, answer: null }),
			),
		);
		const pending = (await gw.api(`/v1/sessions/${id}/approvals?status=pending`, { headers: headers() })).body
			.approvals;
		expect(pending).toHaveLength(4);
		// The admin's inbox, every session's pending dialogs, holds the four.
		const inbox = (await gw.api("/v1/approvals?status=pending")).body.approvals;
		expect(inbox.filter((a: { sessionId: string }) => a.sessionId === id)).toHaveLength(4);

		// The extension got `false` for the refused ones at once; the four it waits on are a person's to answer.
		for (const approval of pending) {
			const answered = await gw.api(`/v1/sessions/${id}/approvals/${approval.id}`, {
				method: "POST",
				json: { confirmed: true },
				headers: headers(),
			});
			expect(answered.status).toBe(200);
		}
		await until(async () => {
			const ui = await gw.api(`/v1/sessions/${id}/ui`, { headers: headers() });
			return ui.body.notifications.some((n: { message: string }) => n.message === 'flood {"yes":4,"no":16}');
		});
		await until(async () => (await gw.api(`/v1/sessions/${id}`, { headers: headers() })).body.status === "idle");
	});
});
