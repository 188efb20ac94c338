import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { hasCommand } from "../helpers/host.ts";

// A webhook whose name resolves to an address with no route (a host without IPv6 routes, say) made
// the connect fail at once, before the request had its error listener: the unhandled error killed
// the gateway, and again at each restart since the message stays in the outbox (an attacker's
// review). The send runs inside `unshare -n` (only loopback: no packet can leave), where any
// address but loopback has no route.
const sender = resolve(import.meta.dirname, "../../src/webhooks/sender.ts");
const script = `
import { send } from ${JSON.stringify(sender)};
const result = await send(new URL("http://hooks.test/hook"), { address: "198.51.99.1", family: 4 }, {}, "{}", 5000);
console.log(JSON.stringify(result));
`;

describe.runIf(hasCommand("unshare"))("a webhook send to an address with no route", () => {
	it("is a failed attempt, not a crash", () => {
		const run = spawnSync("unshare", ["-n", process.execPath, "--input-type=module", "-e", script], {
			encoding: "utf8",
			timeout: 20_000,
		});
		expect(run.stderr).not.toMatch(/Unhandled 'error' event/);
		expect(run.status).toBe(0);
		expect(JSON.parse(run.stdout)).toEqual({ status: null, error: expect.stringMatching(/ENETUNREACH/) });
	});
});
