import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fixtures } from "../helpers/gateway.ts";

/**
 * Webhooks to private addresses and to the host's own, tried for real: webhook-netns.mjs runs in a
 * network namespace of its own (`unshare -n`, only loopback, so nothing can leave the machine),
 * puts 10.0.0.1, 192.168.1.1, 172.16.0.1, 100.64.0.1, 169.254.169.254 and fc00::1 on its `lo`
 * with one receiver on them all, and starts real gateways there (stub pi). A destination the
 * gateway fails to refuse would be delivered to that receiver.
 */
let child: ChildProcess | undefined;
afterAll(() => {
	if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

interface Registration {
	url: string;
	status: number;
	code?: string;
	detail?: string;
}
interface Settled {
	url: string;
	state: string;
	log: [number | null, string | null][];
}
interface Report {
	refused: Registration[];
	beforeHostOwned: number;
	afterHostOwned: Registration;
	deliveries: Settled[];
	receivedWhileRefused: string[];
	webhooksFile: string;
	allowed: [string, number][];
	notListed: Registration[];
	allowedDeliveries: Settled[];
	receivedAllowed: string[];
}

function runInNamespace(): Promise<Report> {
	return new Promise((resolve, reject) => {
		const proc = spawn("unshare", ["-n", process.execPath, join(fixtures, "webhook-netns.mjs")], {
			stdio: ["ignore", "pipe", "pipe"],
		});
		child = proc;
		let stdout = "";
		let stderr = "";
		proc.stdout?.setEncoding("utf8").on("data", (text: string) => {
			stdout += text;
		});
		proc.stderr?.setEncoding("utf8").on("data", (text: string) => {
			stderr += text;
		});
		proc.once("error", reject);
		proc.once("exit", (code) => {
			if (code !== 0) reject(new Error(`webhook-netns.mjs exited ${code}:\n${stderr}`));
			else resolve(JSON.parse(stdout.trim().split("\n").at(-1) as string) as Report);
		});
	});
}

describe("webhook destinations in a network namespace", () => {
	it("refuse private, loopback, link-local, unique-local and the host's own addresses at registration, at start and at delivery; --webhook-allow lifts exactly what it lists", async () => {
		const report = await runInNamespace();
		const refusal = (address: string, range: string) =>
			expect.objectContaining({
				status: 422,
				code: "webhook_destination_refused",
				detail: expect.stringMatching(
					new RegExp(
						`^Refused by default: .*${esc(address)}.* is in ${esc(range)}, .*To allow it, add ${esc(address)}\\b.* to --webhook-allow \\(config webhookAllow\\)$`,
					),
				),
			});
		expect(report.refused).toEqual([
			refusal("10.0.0.1", "10.0.0.0/8"),
			refusal("192.168.1.1", "192.168.0.0/16"),
			refusal("172.16.0.1", "172.16.0.0/12"),
			refusal("100.64.0.1", "100.64.0.0/10"),
			refusal("169.254.169.254", "169.254.0.0/16"),
			refusal("fc00::1", "fc00::/7"),
			refusal("127.0.0.1", "127.0.0.0/8"),
			refusal("::1", "::1/128"),
			refusal("0.0.0.0", "0.0.0.0/8"),
			refusal("10.0.0.1", "10.0.0.0/8"),
			refusal("192.168.1.1", "192.168.0.0/16"),
		]);

		// Registered while 11.0.0.1 was nobody's; once the host has it, refused at registration and
		// at delivery (a failed attempt saying why), and the receiver on it got nothing.
		expect(report.beforeHostOwned).toBe(201);
		const own =
			"Refused by default: 11.0.0.1 is one of this host's own addresses. To allow it, add 11.0.0.1 to --webhook-allow (config webhookAllow)";
		expect(report.afterHostOwned).toMatchObject({ status: 422, detail: own });
		expect(report.deliveries).toEqual([
			{ url: expect.stringContaining("//11.0.0.1:"), state: "failed", log: [[null, `refused: ${own}`]] },
		]);
		expect(report.receivedWhileRefused).toEqual([]);

		expect(report.webhooksFile).toBe(
			"--webhooks-file: webhook ops: Refused by default: 10.0.0.1 is in 10.0.0.0/8, private network (RFC 1918). To allow it, add 10.0.0.1 or 10.0.0.0/8 to --webhook-allow (config webhookAllow)",
		);

		// The same receiver, listed: delivered to each listed address, and only those.
		expect(report.allowed.map(([, status]) => status)).toEqual([201, 201, 201, 201]);
		expect(report.notListed).toEqual([refusal("172.16.0.1", "172.16.0.0/12"), refusal("127.0.0.1", "127.0.0.0/8")]);
		expect(report.allowedDeliveries.map((d) => [d.state, d.log])).toEqual(
			Array.from({ length: 4 }, () => ["delivered", [[204, null]]]),
		);
		expect(report.receivedAllowed).toEqual(["10.0.0.1", "11.0.0.1", "192.168.1.1", "fc00::1"]);
	}, 120_000);
});

function esc(text: string): string {
	return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
