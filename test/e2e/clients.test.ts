import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noPool, plantInNewSessionFolders, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";

// The examples in examples/ run as their users run them: as processes, against a live gateway
// with real pi, the demo model and the shipped permission gate. A spec that lies breaks the typed SDK example
// (types or runtime); a README that drifts breaks the walkthrough's transcript.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const examples = join(repo, "examples");
const token = "clients-test-token-0123456789";

let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway({ ...noPool, token });
});
afterAll(() => gw?.stop());

const env = (g: TestGateway) => ({
	...process.env,
	// The examples need Node 22 first on PATH, like a user who has it installed.
	PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
	PI_GATEWAY_URL: g.url,
	PI_GATEWAY_TOKEN: token,
});

/** What both client examples print, for the session id they print first. */
const clientTranscript = (id: string) =>
	[
		`session ${id} is idle (model demo)`,
		"> bash: rm -rf ./pi-gateway-scratch && echo removed",
		"approval requested (select): Allow this bash command?",
		"",
		"  rm -rf ./pi-gateway-scratch && echo removed",
		'approval answered: {"value":"Allow"}',
		"tool bash finished",
		"assistant: The command finished. Output:",
		"removed",
		"run settled (aborted: false)",
		`session ${id} deleted (HTTP 204)`,
		"",
	].join("\n");

/** Runs a client example and checks what it printed and what it did to the gateway. */
async function runClient(command: string, args: string[]) {
	// The example's session works in a folder of its own (README's layout): the scratch folder its
	// prompt removes is made there as soon as the folder appears.
	const plant = plantInNewSessionFolders(gw, "pi-gateway-scratch");
	const answered = await answeredCount();
	const { stdout, stderr } = await run(command, args, { env: env(gw), cwd: repo, timeout: 60_000 }).finally(plant.stop);
	const id = /^session (ses_[\w-]+) /.exec(stdout)?.[1] ?? "";
	expect(stdout, stderr).toBe(clientTranscript(id));
	// The approved command really ran, the gateway counted one answer, and the session is gone.
	// The warm pool makes folders ahead of creates too: the session's is among those planted.
	expect(plant.planted).toContain(join(gw.workspace, id));
	expect(existsSync(join(gw.workspace, id, "pi-gateway-scratch"))).toBe(false);
	expect(await answeredCount()).toBe(answered + 1);
	expect(gw.registry.list().map((s) => s.id)).not.toContain(id);
}

async function answeredCount(): Promise<number> {
	const text: string = (await gw.api("/metrics")).body;
	const match = /^pi_gateway_approvals_resolved_total\{status="answered"\} (\d+)$/m.exec(text);
	return Number(match?.[1] ?? Number.NaN);
}

describe("TypeScript SDK example (openapi-typescript + openapi-fetch)", () => {
	it("compiles under tsc --noEmit (its own tsconfig)", async () => {
		const tsc = join(repo, "node_modules/.bin/tsc");
		const result = await run(tsc, ["--noEmit", "-p", join(examples, "typescript/tsconfig.json")], {
			env: env(gw),
		}).catch((error) => error);
		expect(`${result.stdout}${result.stderr ?? ""}`).toBe("");
	});

	it("creates a session, streams a prompt, answers the approval, deletes the session", async () => {
		await runClient(process.execPath, [join(examples, "typescript/main.ts")]);
	});

	it("wait.ts: a prompt in wait mode answers a typed JSON result", async () => {
		const before = gw.registry.size;
		const { stdout } = await run(process.execPath, [join(examples, "typescript/wait.ts"), "echo: typed"], {
			env: env(gw),
			timeout: 60_000,
		});
		expect(stdout).toMatch(/^typed \(stop; run gw_\d+\)\n$/);
		expect(gw.registry.size).toBe(before);
	});

	it("wait.ts and workspace.ts read the gateway's token file when PI_GATEWAY_TOKEN is unset", async () => {
		// examples/README promises every example falls back to $PI_GATEWAY_DATA_DIR/token; these two
		// once sent no token at all and died on a 401 stack trace.
		const dataDir = mkdtempSync(join(tmpdir(), "examples-token-"));
		writeFileSync(join(dataDir, "token"), `${token}\n`);
		const { PI_GATEWAY_TOKEN: _unset, ...rest } = env(gw);
		const fileEnv = { ...rest, PI_GATEWAY_DATA_DIR: dataDir };
		const waited = await run(process.execPath, [join(examples, "typescript/wait.ts"), "echo: from the file"], {
			env: fileEnv,
			timeout: 60_000,
		});
		expect(waited.stdout).toMatch(/^from the file \(stop; run gw_\d+\)\n$/);
		const workspace = await run(process.execPath, [join(examples, "typescript/workspace.ts")], {
			env: fileEnv,
			timeout: 60_000,
		});
		expect(workspace.stdout).toMatch(/^modified notes\/todo\.txt\n/);
		rmSync(dataDir, { recursive: true, force: true });
	});
});

describe.skipIf(!hasCommand("python3"))("Python example (standard library only)", () => {
	it("creates a session, streams a prompt, answers the approval, deletes the session", async () => {
		await runClient("python3", [join(examples, "python/client.py")]);
	});

	it("reports a problem+json answer and exits 1", async () => {
		const result = await run("python3", [join(examples, "python/client.py")], {
			env: { ...env(gw), PI_GATEWAY_TOKEN: "not-the-token-0123456789" },
		}).catch((error) => error);
		expect(result.code).toBe(1);
		expect(result.stderr).toBe(
			"pi-gateway: HTTP 401 unauthorized: A valid bearer token is required (Authorization: Bearer …)\n",
		);
	});
});

describe.skipIf(!hasCommand("curl") || !hasCommand("jq"))("curl walkthrough (the README's)", () => {
	const transcriptPath = join(examples, "curl/walkthrough.txt");
	let transcript = "";

	beforeAll(async () => {
		// A gateway of its own: the walkthrough shows metrics, which count everything the gateway did.
		// No token given: the gateway generates one in its data dir, and the script reads it from
		// there, as a user who typed `npm start` would.
		const own = await startTestGateway(noPool);
		try {
			const { PI_GATEWAY_TOKEN: _, ...rest } = env(own);
			const scriptEnv = { ...rest, PI_GATEWAY_DATA_DIR: own.config.dataDir };
			const { stdout } = await run("bash", [join(examples, "curl/walkthrough.sh")], {
				env: scriptEnv,
				timeout: 60_000,
			});
			// Session ids are random; the transcript shows the spec's example id.
			transcript = stdout.replace(/ses_[\w-]{12}/g, "ses_Qm9wYXJ0aWFs");
		} finally {
			await own.stop();
		}
		if (process.env.UPDATE_WALKTHROUGH) writeFileSync(transcriptPath, transcript);
	});

	it("prints exactly walkthrough.txt", () => {
		expect(transcript).toBe(readFileSync(transcriptPath, "utf8"));
	});

	const readme = existsSync(join(repo, "README.md")) ? readFileSync(join(repo, "README.md"), "utf8") : "";
	const block = /<!-- walkthrough:start -->\n```console\n([\s\S]*?)```\n<!-- walkthrough:end -->/.exec(readme)?.[1];
	it.skipIf(block === undefined)("the README shows that transcript", () => {
		expect(block).toBe(transcript);
	});
});
