import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";
import { startReceiver } from "../helpers/receiver.ts";

const repo = resolve(import.meta.dirname, "../..");
const script = join(repo, "examples/curl/unattended.sh");

/** The ```sh blocks of the docs pages this script backs. */
function readmeCurlLines(): string[] {
	const lines: string[] = [];
	for (const page of ["webhooks", "idempotency", "policies"]) {
		const section = readFileSync(join(repo, `docs/${page}.md`), "utf8");
		expect(section, `docs/${page}.md`).not.toBe("");
		for (const block of section.matchAll(/```sh\n([\s\S]*?)```/g))
			lines.push(
				...(block[1] as string)
					.split("\n")
					// The lines that set up what the script exercises (docs-blocks.test.ts runs each block whole).
					.filter((l) => /\bcurl\b/.test(l) && /\/v1\/webhooks|Idempotency-Key|"policies"|approvals\/history/.test(l)),
			);
	}
	return lines;
}

describe.skipIf(!hasCommand("curl") || !hasCommand("jq"))(
	"the unattended-use examples of docs/webhooks.md, idempotency.md and policies.md (examples/curl/unattended.sh)",
	() => {
		let gw: TestGateway;
		let receiver: Awaited<ReturnType<typeof startReceiver>>;
		let stdout = "";
		beforeAll(async () => {
			receiver = await startReceiver();
			gw = await startTestGateway({ webhookAllow: ["loopback"] });
			const env = {
				PATH: process.env.PATH,
				PI_GATEWAY_URL: gw.url,
				PI_GATEWAY_TOKEN: gw.config.token,
				RECEIVER: receiver.url,
			};
			try {
				({ stdout } = await promisify(execFile)("bash", [script], {
					env: env as NodeJS.ProcessEnv,
					timeout: 60_000,
				}));
			} catch (error) {
				const { stdout: out, stderr } = error as { stdout: string; stderr: string };
				throw new Error(`unattended.sh failed:\n${out}\n${stderr.split("\n").slice(-15).join("\n")}`);
			}
		});
		afterAll(async () => {
			await gw?.stop();
			await receiver?.close();
		});

		it("run to the end with the answers the docs show", () => {
			expect(stdout).toContain('{"stopReason":"stop"}');
			expect(stdout).toMatch(/^idempotent-replayed: true\r?$/im);
			expect(stdout).toContain('{"status":422,"code":"idempotency_key_reused"}');
			expect(stdout).toContain('{"resolvedBy":"policy:scratch-ok","answer":{"value":"Allow"}}');
			expect(stdout).toContain('{"type":"run.settled","state":"delivered","status":204}');
			expect(stdout.trim().split("\n").at(-1)).toBe("204");
		});

		it("deliver the three events, with no secret in any payload (signatures are checked in webhooks.test.ts)", () => {
			expect(JSON.stringify(receiver.received.map((r) => r.json))).not.toContain("whsec_");
			expect(receiver.received.map((r) => r.json.type)).toEqual([
				"approval.requested",
				"approval.resolved",
				"run.settled",
			]);
		});

		it("hold every curl line of the docs' Webhooks, Idempotency and Approval policies pages", () => {
			const lines = readmeCurlLines();
			expect(lines.length).toBeGreaterThan(5);
			const text = readFileSync(script, "utf8");
			for (const line of lines) expect(text, line).toContain(line.trim());
		});
	},
);
