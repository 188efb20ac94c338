import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// The workspace examples against a live gateway (real pi, demo model): each uploads a file, runs
// a prompt that changes it, and prints the diff.
const run = promisify(execFile);
const examples = resolve(import.meta.dirname, "../../examples");
let gw: TestGateway;

beforeAll(async () => {
	gw = await startTestGateway(noPool);
});
afterAll(() => gw?.stop());

const env = () => ({ ...process.env, PI_GATEWAY_URL: gw.url, PI_GATEWAY_TOKEN: gw.config.token ?? "" });
const expected =
	/^modified notes\/todo\.txt\ndiff --git a\/notes\/todo\.txt b\/notes\/todo\.txt\n[\s\S]* buy milk\n\+call mum\n\nnow:\nbuy milk\ncall mum\n$/;

describe("workspace examples", () => {
	it("typescript/workspace.ts uploads, runs, prints the diff", async () => {
		const { stdout } = await run(process.execPath, [join(examples, "typescript/workspace.ts")], {
			env: env(),
			timeout: 60_000,
		});
		expect(stdout).toMatch(expected);
		expect(gw.registry.size).toBe(0);
	});

	it("python/workspace.py does the same with the standard library", async () => {
		const { stdout } = await run("python3", [join(examples, "python/workspace.py")], { env: env(), timeout: 60_000 });
		expect(stdout).toMatch(expected);
	});
});
