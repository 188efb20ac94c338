import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
	dialectOf,
	lacksCommand,
	legacyMessageUpdate,
	looksLegacy,
	piPackageOf,
	synthesisedSettled,
} from "../../src/pi/dialect.ts";
import { bundledPiCli } from "../../src/sessions/process/spawn.ts";

const legacyCli = resolve(import.meta.dirname, "../../node_modules/pi-legacy/dist/cli.js");

describe("pi dialects", () => {
	it("tells pi 0.73 from pi 1.x by the package the command runs", () => {
		expect(piPackageOf([process.execPath, legacyCli])).toEqual({
			name: "@mariozechner/pi-coding-agent",
			version: "0.73.1",
		});
		expect(dialectOf(piPackageOf([process.execPath, legacyCli]))).toBe("legacy");
		expect(dialectOf(piPackageOf([process.execPath, bundledPiCli()]))).toBe("current");
		// A stub or wrapper is no pi package: current until it shows otherwise in band.
		expect(piPackageOf([process.execPath, resolve(import.meta.dirname, "../fixtures/stub-pi.mjs")])).toBeUndefined();
	});

	it("knows the four commands 0.73 lacks, and only under 0.73", () => {
		for (const type of ["clear_queue", "get_available_thinking_levels", "get_entries", "get_tree"]) {
			expect(lacksCommand("legacy", type)).toBe(true);
			expect(lacksCommand("current", type)).toBe(false);
		}
		expect(lacksCommand("legacy", "get_state")).toBe(false);
	});

	it("detects a legacy pi from a prompt accepted without a disposition", () => {
		expect(looksLegacy({ command: "prompt", success: true })).toBe(true);
		expect(looksLegacy({ command: "prompt", success: true, data: { disposition: "started" } })).toBe(false);
		expect(looksLegacy({ command: "prompt", success: false })).toBe(false);
	});

	it("strips the repeated partial message from a legacy message_update", () => {
		const line = JSON.stringify({
			type: "message_update",
			message: { role: "assistant" },
			assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "hi", partial: { content: [] } },
		});
		expect(JSON.parse(legacyMessageUpdate(line))).toEqual({
			type: "message_update",
			assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "hi" },
		});
	});

	it("synthesises agent_settled from agent_end, aborted as the last assistant message says", () => {
		const end = (stopReason: string) =>
			JSON.stringify({ type: "agent_end", messages: [{ role: "user" }, { role: "assistant", stopReason }] });
		expect(JSON.parse(synthesisedSettled(end("stop")))).toEqual({
			type: "agent_settled",
			aborted: false,
			synthetic: true,
		});
		expect(JSON.parse(synthesisedSettled(end("aborted")))).toEqual({
			type: "agent_settled",
			aborted: true,
			synthetic: true,
		});
	});
});
