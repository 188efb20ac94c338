import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.ts";
import { base64Bytes, guardCommand } from "../../src/sessions/registry/guard.ts";
import type { GatewayError } from "../../src/shared/errors.ts";

let root: string;
let config: ReturnType<typeof parseConfig>;

beforeAll(() => {
	root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-guard-")));
	for (const dir of ["ws/sub", "data/pi-sessions/own", "data/pi-sessions/other", "outside"])
		mkdirSync(join(root, dir), { recursive: true });
	for (const file of ["s.jsonl", "own/s.jsonl", "other/s.jsonl"])
		writeFileSync(join(root, "data/pi-sessions", file), "");
	symlinkSync(join(root, "data/pi-sessions/other/s.jsonl"), join(root, "data/pi-sessions/own/link.jsonl"));
	writeFileSync(join(root, "outside/s.jsonl"), "");
	symlinkSync(join(root, "outside"), join(root, "ws/link"));
	config = parseConfig({ workspaceRoot: join(root, "ws"), dataDir: join(root, "data"), maxImageBytes: 3 });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const refusal = (command: Record<string, unknown>) => {
	try {
		guardCommand(config, { type: "x", ...command }, join(root, "data/pi-sessions/own"));
	} catch (error) {
		return [(error as GatewayError).status, (error as GatewayError).code];
	}
	return undefined;
};

describe("guardCommand", () => {
	it("measures base64 without decoding it", () => {
		for (const bytes of [0, 1, 2, 3, 4, 5, 100]) {
			expect(base64Bytes(Buffer.alloc(bytes).toString("base64"))).toBe(bytes);
		}
	});

	it("refuses images over the limit with 413", () => {
		const image = (n: number) => ({ type: "image", mimeType: "image/png", data: Buffer.alloc(n).toString("base64") });
		expect(refusal({ images: [image(3)] })).toBeUndefined();
		expect(refusal({ images: [image(3), image(4)] })).toEqual([413, "image_too_large"]);
	});

	it("makes paths real and keeps them inside the roots", () => {
		expect(guardCommand(config, { type: "export_html", outputPath: "sub/../out.html" }).outputPath).toBe(
			join(root, "ws/out.html"),
		);
		const own = join(root, "data/pi-sessions/own");
		expect(guardCommand(config, { type: "switch_session", sessionPath: "s.jsonl" }, own)).toEqual({
			type: "switch_session",
			sessionPath: join(own, "s.jsonl"),
		});
		expect(refusal({ outputPath: "link/out.html" })).toEqual([403, "path_outside_root"]);
		expect(refusal({ outputPath: "nope/out.html" })).toEqual([400, "path_not_found"]);
	});

	it("keeps session files to the session's own folder, whether the file outside exists or not", () => {
		const notOwn = [403, "session_file_not_own"];
		expect(refusal({ sessionPath: join(root, "ws/link/s.jsonl") })).toEqual(notOwn);
		expect(refusal({ sessionPath: join(root, "data/pi-sessions/s.jsonl") })).toEqual(notOwn);
		expect(refusal({ sessionPath: "../other/s.jsonl" })).toEqual(notOwn);
		expect(refusal({ sessionPath: "../other/missing.jsonl" })).toEqual(notOwn);
		expect(refusal({ sessionPath: "link.jsonl" })).toEqual(notOwn);
		expect(refusal({ sessionPath: join(root, "data") })).toEqual(notOwn);
		expect(refusal({ parentSession: "../../../outside/s.jsonl" })).toEqual(notOwn);
		expect(refusal({ parentSession: "missing.jsonl" })).toEqual([400, "path_not_found"]);
		expect(refusal({ sessionPath: "." })).toEqual([400, "not_a_file"]);
		// A session that keeps no files (persist:false) names none.
		expect(() => guardCommand(config, { type: "switch_session", sessionPath: "s.jsonl" })).toThrow(
			/keeps no pi session files/,
		);
	});
});
