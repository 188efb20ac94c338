import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { changeNoFile, FirstSnapshotRoutes, heldByTheGate } from "../../src/http/transport/first-snapshot.ts";

// The checked-in document, with each operation under its dotted name (what the gateway's own
// document calls operationId).
const spec = parse(readFileSync(join(import.meta.dirname, "../../openapi.yaml"), "utf8"));
const paths: Record<string, Record<string, { operationId?: string }>> = {};
for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, any>>))
	paths[path] = Object.fromEntries(
		Object.entries(item).map(([method, op]) => [method, { operationId: op["x-operation-name"] }]),
	);
const names = new Set(Object.values(paths).flatMap((item) => Object.values(item).map((op) => op.operationId)));
const routes = new FirstSnapshotRoutes();
routes.load({ paths });
const s = "/v1/sessions/ses_abc123";

describe("which requests wait for a session's first snapshot", () => {
	it("names only operations the API has", () => {
		for (const id of [...changeNoFile, ...heldByTheGate]) expect(names, id).toContain(id);
	});

	it("never: reads, the session's DELETE and the aborts", () => {
		for (const method of ["GET", "HEAD"]) expect(routes.waits(method, `${s}/files/content`, false)).toBe(false);
		expect(routes.waits("DELETE", s, false)).toBe(false);
		for (const path of ["abort", "retry/abort", "bash/abort"])
			expect(routes.waits("POST", `${s}/${path}`, false)).toBe(false);
	});

	it("prompt, steer and follow-up (and their streams) only when pi has no snapshot gate", () => {
		for (const path of ["prompt", "steer", "follow-up", "prompt/stream", "steer/stream", "follow-up/stream"]) {
			expect(routes.waits("POST", `${s}/${path}`, true), path).toBe(false);
			expect(routes.waits("POST", `${s}/${path}`, false), path).toBe(true);
		}
	});

	it("everything else that is not a read waits, gated or not: an upload, bash, a file's DELETE, an unknown path", () => {
		for (const gated of [true, false]) {
			expect(routes.waits("PUT", `${s}/files/content`, gated)).toBe(true);
			expect(routes.waits("DELETE", `${s}/files/content`, gated)).toBe(true);
			expect(routes.waits("POST", `${s}/bash`, gated)).toBe(true);
			expect(routes.waits("POST", `${s}/compact`, gated)).toBe(true);
			expect(routes.waits("POST", `${s}/not-a-route`, gated)).toBe(true);
			// A path that merely ends like an exempt one is not it.
			expect(routes.waits("POST", `${s}/x/abort`, gated)).toBe(true);
		}
	});
});
