import { describe, expect, it } from "vitest";
import { Activity } from "../../src/sessions/events/activity.ts";

const said = (role: string, text: string, extra: object = {}) => ({
	message: { role, content: [{ type: "text", text }], ...extra },
});
const failed = (errorMessage: string) => ({
	message: { role: "assistant", content: [], stopReason: "error", errorMessage },
});

describe("a session's activity for the list", () => {
	it("previews the last message on one line, cut at 160 characters", () => {
		const a = new Activity();
		expect(a.view()).toEqual({ preview: null, lastError: null });
		a.apply("message_end", said("user", "fix\n  the   tests"));
		expect(a.view().preview).toEqual({ role: "user", text: "fix the tests" });
		a.apply("message_end", said("assistant", "x".repeat(300)));
		expect(a.view().preview?.text).toHaveLength(160);
		expect(a.view().preview?.text.endsWith("…")).toBe(true);
	});

	it("shows the running tool while it runs, then the last message again", () => {
		const a = new Activity();
		a.apply("message_end", said("user", "run it"));
		a.apply("tool_execution_start", { toolCallId: "c1", toolName: "bash", args: { command: "npm test" } });
		expect(a.view().preview).toEqual({ role: "tool", text: "$ npm test" });
		a.apply("tool_execution_end", { toolCallId: "c1" });
		expect(a.view().preview).toEqual({ role: "user", text: "run it" });
		a.apply("tool_execution_start", { toolCallId: "c2", toolName: "read", args: { path: "src/a.ts" } });
		expect(a.view().preview).toEqual({ role: "tool", text: "read src/a.ts" });
	});

	it("keeps one error with pi's retry count until the next prompt", () => {
		const a = new Activity();
		a.apply("message_end", said("user", "go"));
		a.apply("message_end", failed("529 overloaded"));
		for (const attempt of [1, 2, 3]) {
			a.apply("auto_retry_start", { attempt, maxAttempts: 3, errorMessage: "529 overloaded" });
			a.apply("message_end", failed("529 overloaded"));
		}
		expect(a.view().lastError).toEqual({ message: "529 overloaded", retries: 3 });
		expect(a.view().preview).toEqual({ role: "user", text: "go" });
		a.apply("message_end", said("user", "again"));
		expect(a.view().lastError).toBeNull();
		a.apply("message_end", failed("boom"));
		expect(a.view().lastError).toEqual({ message: "boom", retries: 0 });
		a.apply("message_end", said("assistant", "fine now"));
		expect(a.view().lastError).toBeNull();
	});
});
