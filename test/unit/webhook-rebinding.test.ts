import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteWebhookStore } from "../../src/store/sqlite/webhooks.ts";
import { WebhookService } from "../../src/webhooks/service.ts";
import { until } from "../helpers/gateway.ts";

/**
 * DNS rebinding against the real outbox and sender: the name answers an allowed address when the
 * webhook is registered and a refused one at delivery time. Both receivers are on loopback
 * (127.0.0.1 listed in --webhook-allow, 127.0.0.2 refused: loopback not listed), so nothing
 * leaves the machine whatever the code does. The resolver is the test's (Destinations' lookup).
 */
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
	for (const step of cleanup.reverse()) await step();
});

async function receiver(host: string, port = 0) {
	const seen: IncomingHttpHeaders[] = [];
	const server = createServer((req, res) => {
		seen.push(req.headers);
		req.resume().on("end", () => res.writeHead(204).end());
	});
	await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, host, resolve));
	cleanup.push(() => new Promise((resolve) => server.close(resolve)));
	return { seen, port: (server.address() as AddressInfo).port };
}

describe("a webhook whose name answers another address at delivery time", () => {
	it("is checked on the new answer: the refused address gets nothing, the attempt says why, and a later allowed answer is delivered to that address", async () => {
		const allowed = await receiver("127.0.0.1");
		const refused = await receiver("127.0.0.2", allowed.port);
		const answers = ["127.0.0.1", "127.0.0.2", "127.0.0.1"];
		const asked: string[] = [];
		const lookup = async (host: string) => {
			asked.push(host);
			const address = answers.shift() ?? "127.0.0.2";
			return [{ address, family: 4 }];
		};
		const store = new SqliteWebhookStore(new DatabaseSync(":memory:"));
		const service = new WebhookService(
			{
				webhookAllow: ["127.0.0.1"],
				webhookTimeoutMs: 5000,
				webhookRetryBaseMs: 1,
				webhookMaxAttempts: 5,
				webhookConcurrency: 1,
				maxWebhooks: 10,
				webhookMaxPending: 10,
				destinations: { lookup },
			},
			store,
			{ subscribeAll: () => () => {}, currentRunId: () => undefined },
			pino({ level: "silent" }),
		);
		cleanup.push(() => service.detach());
		const url = `http://rebind.example:${allowed.port}/hook`;
		const hook = await service.create({ url, events: ["run.settled"] });
		const payload = JSON.stringify({ type: "run.settled", timestamp: new Date().toISOString(), data: {} });
		store.enqueue(hook.id, { id: "msg_1", type: "run.settled", payload, createdAt: new Date().toISOString() }, 10);
		service.start();

		const delivery = await until(async () => {
			const [d] = await service.deliveries(hook.id, 10);
			return d?.state === "delivered" && d;
		});
		expect(delivery.log.map((a) => [a.status, a.error])).toEqual([
			[
				null,
				"refused: Refused by default: rebind.example resolves to 127.0.0.2, which is in 127.0.0.0/8, loopback. " +
					"To allow it, add 127.0.0.2, 127.0.0.0/8, loopback or rebind.example to --webhook-allow (config webhookAllow)",
			],
			[204, null],
		]);
		expect(refused.seen).toEqual([]);
		// The request went to the checked address, under the URL's own host name: no second lookup.
		expect(allowed.seen.map((h) => [h.host, h["webhook-id"]])).toEqual([[`rebind.example:${allowed.port}`, "msg_1"]]);
		expect(asked).toEqual(["rebind.example", "rebind.example", "rebind.example"]);
	});
});
