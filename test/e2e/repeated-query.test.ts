import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { errorCode } from "../helpers/method-matrix.ts";

// `?limit=1&limit=2` used to reach the route's schema as an array and come back as "expected
// number, received NaN". Every route now answers it alike, naming the parameter, before any
// handler (or pi) sees the request: checked for every operation of the spec.
const spec = parse(readFileSync(resolve(import.meta.dirname, "../../openapi.yaml"), "utf8")) as {
	paths: Record<string, Record<string, unknown>>;
};
const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
	Object.keys(item)
		.filter((method) => ["get", "post", "put", "patch", "delete"].includes(method))
		.map((method) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, "x_1") })),
);

let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway();
});
afterAll(async () => {
	await gw?.stop();
});

describe("a query parameter given twice", () => {
	it("GET /v1/sessions?limit=1&limit=2 is a 400 problem that names limit", async () => {
		const res = await gw.fetch("/v1/sessions?limit=1&limit=2");
		expect(res.status).toBe(400);
		expect(res.headers.get("content-type")).toContain("application/problem+json");
		const problem = (await res.json()) as { detail: string };
		expect(problem).toMatchObject({
			status: 400,
			code: "repeated_query_parameter",
			issues: [{ path: "limit", message: "given more than once" }],
		});
		expect(problem.detail).toContain('"limit" is given more than once');
		expect(JSON.stringify(problem)).not.toContain("NaN");
		// Once is fine.
		expect((await gw.fetch("/v1/sessions?limit=1")).status).toBe(200);
	});

	it(`is refused alike by every operation of the spec (${operations.length}), with no session made`, async () => {
		expect(operations.length).toBeGreaterThan(30);
		for (const { method, path } of operations) {
			const res = await gw.fetch(`${path}?a=1&b=2&a=3`, {
				method,
				headers: { "content-type": "application/json" },
				body: method === "GET" || method === "DELETE" ? undefined : "{}",
			});
			// problem+json's code, or OpenAI's error.code on the paths that speak its shape.
			const code = errorCode(await res.json());
			expect({ method, path, status: res.status, code }).toEqual({
				method,
				path,
				status: 400,
				code: "repeated_query_parameter",
			});
		}
		expect((await gw.api("/v1/sessions")).body.sessions).toEqual([]);
	});
});
