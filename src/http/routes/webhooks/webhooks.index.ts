import type { WebhookService } from "../../../webhooks/service.ts";
import { createRouter } from "../../transport/openapi.ts";
import { ApiError } from "../../transport/problem.ts";
import {
	createWebhook,
	deleteWebhook,
	getWebhook,
	listDeliveries,
	listWebhooks,
	redeliver,
} from "./webhooks.routes.ts";

/** `service` is read per request: startGateway makes it once the store is open. */
export function webhooksRouter(service: () => WebhookService | undefined) {
	const running = () => {
		const s = service();
		if (!s)
			throw new ApiError(
				404,
				"webhooks_unavailable",
				"Webhooks are off: this app was built without the gateway's store",
			);
		return s;
	};
	return createRouter()
		.openapi(createWebhook, async (c) => {
			const { secret, ...hook } = await running().create(c.req.valid("json"));
			return c.json({ ...hook, secret }, 201, { Location: `/v1/webhooks/${hook.id}` });
		})
		.openapi(listWebhooks, async (c) => c.json({ webhooks: await running().list() }, 200))
		.openapi(getWebhook, async (c) => c.json(await running().get(c.req.valid("param").webhookId), 200))
		.openapi(deleteWebhook, async (c) => {
			await running().delete(c.req.valid("param").webhookId);
			return c.body(null, 204);
		})
		.openapi(listDeliveries, async (c) => {
			const { webhookId } = c.req.valid("param");
			return c.json({ deliveries: await running().deliveries(webhookId, c.req.valid("query").limit) }, 200);
		})
		.openapi(redeliver, async (c) => {
			const { webhookId, deliveryId } = c.req.valid("param");
			return c.json(await running().redeliver(webhookId, deliveryId), 202);
		});
}
