import { describe, expect, it } from "vitest";
import { SNAPSHOT_GATE_TITLE } from "../../extensions/snapshot-gate.ts";
import type { UiRequest } from "../../src/pi/protocol.ts";
import { isSnapshotGate, snapshotGateTitle } from "../../src/workspace/snapshot-gate.ts";

describe("the snapshot gate's dialog", () => {
	it("has one title on both sides: the extension asks with what the gateway answers", () => {
		expect(SNAPSHOT_GATE_TITLE).toBe(snapshotGateTitle);
	});

	it("is an input dialog with exactly that title; any other dialog is a person's to answer", () => {
		const input = { type: "extension_ui_request", id: "d1", method: "input", title: snapshotGateTitle } as UiRequest;
		expect(isSnapshotGate(input)).toBe(true);
		expect(isSnapshotGate({ ...input, title: `${snapshotGateTitle} ` } as UiRequest)).toBe(false);
		const confirm = {
			type: "extension_ui_request",
			id: "d2",
			method: "confirm",
			title: snapshotGateTitle,
			message: "",
		};
		expect(isSnapshotGate(confirm as UiRequest)).toBe(false);
	});
});
