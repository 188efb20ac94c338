import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specFiles } from "../../scripts/openapi.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// openapi-zod-client (one more TypeScript generator, issue 31 item 6) turns openapi.yaml into zod
// schemas (its schemas-only template); test/fixtures/generators/zod-flow.ts, typed by them and
// checked by tsc, creates a session, runs a wait-mode prompt and parses the answer by its status
// (200 RunResult, 202 RunAccepted), reads a problem, deletes. The 3.1 document, because zod
// validates: the 3.0 twin's "any value" is `type: object`, which refuses a message's content
// list. The generated
// code is zod 3's API (`z.record(value)`), the version the generator depends on: the program's
// folder resolves `zod` to that copy, as a project using the generator would install it.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const token = "zod-client-test-token-0123456789";
const generator = join(repo, "node_modules/openapi-zod-client");

let gw: TestGateway;
let dir: string;
beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, token });
	mkdirSync(join(repo, ".tmp"), { recursive: true });
	dir = mkdtempSync(join(repo, ".tmp", "zod-client-"));
	mkdirSync(join(dir, "node_modules"));
	symlinkSync(join(generator, "node_modules/zod"), join(dir, "node_modules/zod"));
	copyFileSync(join(repo, "test/fixtures/generators/zod-flow.ts"), join(dir, "zod-flow.ts"));
	writeFileSync(
		join(dir, "tsconfig.json"),
		JSON.stringify({
			compilerOptions: {
				target: "ES2022",
				module: "NodeNext",
				moduleResolution: "NodeNext",
				strict: true,
				noEmit: true,
				allowImportingTsExtensions: true,
				skipLibCheck: true,
				types: ["node"],
			},
			files: ["zod-flow.ts"],
		}),
	);
	const template = join(generator, "src/templates/schemas-only.hbs");
	await run(
		join(repo, "node_modules/.bin/openapi-zod-client"),
		[specFiles["3.1"], "-o", join(dir, "schemas.ts"), "-t", template, "--export-schemas"],
		{ cwd: dir },
	);
}, 120_000);
afterAll(async () => {
	await gw?.stop();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("openapi-zod-client 1.18 schemas from openapi.yaml", () => {
	it("writes every pattern as a regex that compiles (no `\\/` copied into a literal of its own)", () => {
		const schemas = readFileSync(join(dir, "schemas.ts"), "utf8");
		expect(schemas).toContain("mimeType: z.string().regex(/^image\\/[\\w.+-]+$/)");
		// A nullable enum is an enum or null, not `z.enum([…, null])`, which zod refuses.
		expect(schemas).not.toMatch(/z\.enum\(\[[^\]]*null/);
	});

	it("types the program: tsc --noEmit over the flow and the generated schemas", async () => {
		const tsc = join(repo, "node_modules/.bin/tsc");
		const result = await run(tsc, ["-p", join(dir, "tsconfig.json")]).catch((error) => error);
		expect(`${result.stdout}${result.stderr ?? ""}`).toBe("");
	}, 180_000);

	it("creates a session, parses a wait-mode run's answer into its typed model, reads a problem, deletes", async () => {
		const { stdout, stderr } = await run(process.execPath, [join(dir, "zod-flow.ts")], {
			env: { ...process.env, PI_GATEWAY_URL: gw.url, PI_GATEWAY_TOKEN: token },
			timeout: 60_000,
		});
		const id = /^session (ses_[\w-]+) /.exec(stdout)?.[1] ?? "";
		expect(stdout, stderr).toBe(
			[
				`session ${id} is idle (name zod-client, model demo)`,
				"waited: hello from zod (stop, 2 messages, HTTP 200)",
				"problem: 404 session_not_found (application/problem+json)",
				"deleted (HTTP 204)",
				"",
			].join("\n"),
		);
		expect(gw.registry.list().map((s) => s.id)).not.toContain(id);
	}, 180_000);
});
