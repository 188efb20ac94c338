import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.ts";
import type { GatewayError } from "../../src/errors.ts";
import { base64Bytes, guardCommand } from "../../src/sessions/guard.ts";

let root: string;
let config: ReturnType<typeof parseConfig>;

beforeAll(() => {
	root = realpathSync(mkdtempSync(join(tmpdir(), "pi-gateway-guard-")));
	for (const dir of ["ws/sub", "data/pi-sessions", "outside"]) mkdirSync(join(root, dir), { recursive: true });
	writeFileSync(join(root, "data/pi-sessions/s.jsonl"), "");
	writeFileSync(join(root, "outside/s.jsonl"), "");
	symlinkSync(join(root, "outside"), join(root, "ws/link"));
	config = parseConfig({ workspaceRoot: join(root, "ws"), dataDir: join(root, "data"), maxImageBytes: 3 });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const refusal = (command: Record<string, unknown>) => {
	try {
		guardCommand(config, { type: "x", ...command });
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
		expect(
			guardCommand(config, { type: "switch_session", sessionPath: join(root, "data/pi-sessions/s.jsonl") }),
		).toEqual({
			type: "switch_session",
			sessionPath: join(root, "data/pi-sessions/s.jsonl"),
		});
		expect(refusal({ outputPath: "link/out.html" })).toEqual([403, "path_outside_root"]);
		expect(refusal({ outputPath: "nope/out.html" })).toEqual([400, "path_not_found"]);
		expect(refusal({ sessionPath: "link/s.jsonl" })).toEqual([403, "path_outside_root"]);
		expect(refusal({ sessionPath: join(root, "data") })).toEqual([403, "path_outside_root"]);
		expect(refusal({ parentSession: "../outside/s.jsonl" })).toEqual([403, "path_outside_root"]);
		expect(refusal({ parentSession: "missing.jsonl" })).toEqual([400, "path_not_found"]);
	});
});
