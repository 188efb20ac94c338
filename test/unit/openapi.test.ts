import { readFileSync } from "node:fs";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { generateSpec } from "../../scripts/openapi.ts";
import { commandTypes } from "../../src/pi/protocol.ts";
import { errorMediaType } from "../helpers/method-matrix.ts";

const file = join(import.meta.dirname, "../../openapi.yaml");
const checkedIn = readFileSync(file, "utf8");
const spec = parse(checkedIn);
const operations = Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
	Object.entries(item).map(([method, op]) => ({ path, method, op })),
);

describe("openapi.yaml", () => {
	it("is exactly what the route definitions generate (run `npm run spec` after changing routes)", async () => {
		expect(checkedIn).toBe(await generateSpec());
	});

	it("is a valid OpenAPI 3.1 document", async () => {
		const api = await SwaggerParser.validate(structuredClone(spec));
		expect((api as { openapi?: string }).openapi).toBe("3.1.0");
	});

	it("gives every operation a unique operationId, a summary and problem+json errors", () => {
		const ids = operations.map((o) => o.op.operationId);
		expect(new Set(ids).size).toBe(ids.length);
		for (const { path, method, op } of operations) {
			// An identifier in every common language; the dotted name (the audit log's action) beside it.
			expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z]+[A-Z][a-zA-Z0-9]*$/);
			expect(op["x-operation-name"], `${method} ${path}`).toMatch(/^[a-z]+(\.[a-zA-Z]+)+$/);
			expect(op.summary, `${method} ${path}`).toBeTruthy();
			const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
			// problem+json, or the error shape of the protocol the path speaks (OpenAI's), as it declares.
			for (const [, response] of errors) {
				const types = Object.keys((response as any).content);
				if (errorMediaType(spec, path) === "application/problem+json")
					expect(types).toEqual(["application/problem+json"]);
				else expect(types).toContain("application/json");
			}
		}
	});

	it("has an operation for every one of pi's 33 RPC commands, by the command it declares", () => {
		expect(commandTypes).toHaveLength(33);
		// `x-pi-command` names the command an operation sends; descriptions mention commands freely.
		// Each command has exactly one JSON operation; only the `/stream` variants may repeat it.
		const byCommand = new Map<string, string[]>();
		for (const { path, op } of operations) {
			const command = op["x-pi-command"];
			if (command === undefined || path.endsWith("/stream")) continue;
			byCommand.set(command, [...(byCommand.get(command) ?? []), op.operationId]);
		}
		for (const type of commandTypes) expect(byCommand.get(type), type).toHaveLength(1);
		expect([...byCommand.keys()].sort()).toEqual([...commandTypes].sort());
	});
});
