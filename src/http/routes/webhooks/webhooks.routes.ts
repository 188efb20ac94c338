import { createRoute, z } from "@hono/zod-openapi";
import {
	CreatedWebhook,
	CreateWebhookBody,
	Delivery,
	deliveryExample,
	Webhook,
	webhookExample,
} from "../../../webhooks/schemas.ts";
import { json, jsonBody, problems } from "../../transport/openapi.ts";
import { Problem } from "../../transport/problem.ts";

const WebhookParams = z.object({
	webhookId: z.string().openapi({
		param: { name: "webhookId", in: "path" },
		description: "The webhook's id, as `POST /v1/webhooks` answered it",
		example: "wh_Qm9wYXJ0aWFs",
	}),
});
const DeliveryParams = WebhookParams.extend({
	deliveryId: z.string().openapi({
		param: { name: "deliveryId", in: "path" },
		description: "The delivery's id (its `webhook-id` header), as the deliveries list gave it",
		example: "msg_Qm9wYXJ0aWFsX2Jh",
	}),
});

/** An app built in-process without the store (createApp without extras) has no webhooks: 404. */
const unavailable = {
	404: {
		description: "No such webhook or delivery (or webhooks are off: an app built without the gateway's store)",
		content: { "application/problem+json": { schema: Problem } },
	},
};

/** Cluster mode: a change is written to PostgreSQL first; with the database out of reach, nothing changed. */
const databaseUnavailable = {
	503: {
		description:
			"Cluster mode: the database is out of reach (`database_unavailable`) and nothing changed; retry after `Retry-After` seconds",
		headers: z.object({
			"Retry-After": z.number().int().min(0).openapi({ description: "Seconds to wait before retrying", example: 2 }),
		}),
		content: { "application/problem+json": { schema: Problem } },
	},
};

export const createWebhook = createRoute({
	operationId: "webhooks.create",
	method: "post",
	path: "/v1/webhooks",
	tags: ["webhooks"],
	summary: "Subscribe an endpoint to events (signed per Standard Webhooks); the secret is shown only here",
	request: {
		body: jsonBody(CreateWebhookBody, { url: "https://hooks.example.com/pi", events: ["approval.requested"] }),
	},
	responses: {
		201: {
			...json(CreatedWebhook, "The webhook with its signing secret"),
			headers: z.object({ Location: z.string().openapi({ example: "/v1/webhooks/wh_Qm9wYXJ0aWFs" }) }),
		},
		...problems(400, 401, 413, 415, 429),
		422: {
			description:
				"The destination is refused: it resolves to a loopback, private (RFC 1918, 100.64.0.0/10), link-local or metadata, unique-local, multicast, reserved or unspecified address or one of this host's own, or lies outside --webhook-allow (docs/webhooks.md); the detail names the address, its range and what to allow",
			content: { "application/problem+json": { schema: Problem } },
		},
		...unavailable,
		...databaseUnavailable,
	},
});

export const listWebhooks = createRoute({
	operationId: "webhooks.list",
	method: "get",
	path: "/v1/webhooks",
	tags: ["webhooks"],
	summary: "All webhooks (without their secrets)",
	responses: {
		200: json(
			z
				.object({ webhooks: z.array(Webhook).describe("Every webhook, oldest first") })
				.openapi("WebhookList", { description: "The registered webhooks", example: { webhooks: [webhookExample] } }),
			"Webhooks, oldest first",
		),
		...problems(401),
		...unavailable,
	},
});

export const getWebhook = createRoute({
	operationId: "webhooks.get",
	method: "get",
	path: "/v1/webhooks/{webhookId}",
	tags: ["webhooks"],
	summary: "One webhook (without its secret)",
	request: { params: WebhookParams },
	responses: { 200: json(Webhook, "The webhook"), ...problems(401), ...unavailable },
});

export const deleteWebhook = createRoute({
	operationId: "webhooks.delete",
	method: "delete",
	path: "/v1/webhooks/{webhookId}",
	tags: ["webhooks"],
	summary: "Remove a webhook and its pending deliveries",
	request: { params: WebhookParams },
	responses: {
		204: { description: "Removed" },
		...problems(401),
		409: {
			description: "The webhook comes from --webhooks-file",
			content: { "application/problem+json": { schema: Problem } },
		},
		...unavailable,
		...databaseUnavailable,
	},
});

export const listDeliveries = createRoute({
	operationId: "webhooks.deliveries",
	method: "get",
	path: "/v1/webhooks/{webhookId}/deliveries",
	tags: ["webhooks"],
	summary: "The webhook's delivery log, newest first: state, attempts, receivers' status codes",
	request: {
		params: WebhookParams,
		query: z.object({
			limit: z.coerce
				.number()
				.int()
				.min(1)
				.max(1000)
				.default(100)
				.openapi({ description: "How many deliveries to answer at most", example: 100 }),
		}),
	},
	responses: {
		200: json(
			z
				.object({ deliveries: z.array(Delivery).describe("The webhook's deliveries, newest first") })
				.openapi("WebhookDeliveryList", {
					description: "A webhook's deliveries",
					example: { deliveries: [deliveryExample] },
				}),
			"Deliveries",
		),
		...problems(400, 401),
		...unavailable,
	},
});

export const redeliver = createRoute({
	operationId: "webhooks.redeliver",
	method: "post",
	path: "/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
	tags: ["webhooks"],
	summary: "Send a delivered, failed or dropped message again (same webhook-id, a fresh attempt budget)",
	request: { params: DeliveryParams },
	responses: {
		202: json(Delivery, "Queued again"),
		...problems(401),
		409: {
			description: "The delivery is still pending",
			content: { "application/problem+json": { schema: Problem } },
		},
		...unavailable,
	},
});
