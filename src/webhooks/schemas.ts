import { z } from "@hono/zod-openapi";

export const webhookEventTypes = [
	"approval.requested",
	"approval.resolved",
	"tool_call.requested",
	"tool_call.resolved",
	"run.settled",
	"session.exited",
	"session.crashed",
] as const;
export const WebhookEventType = z.enum(webhookEventTypes).openapi("WebhookEventType");
export type WebhookEventType = z.infer<typeof WebhookEventType>;

/** Standard Webhooks secrets: `whsec_` then base64 of 24 to 64 random bytes. */
export const WebhookSecret = z
	.string()
	.regex(/^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/, "a Standard Webhooks secret: whsec_ then base64 of 24-64 bytes")
	.openapi({ example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" });

export const CreateWebhookBody = z
	.strictObject({
		url: z
			.url({ protocol: /^https?$/, error: "an http:// or https:// URL" })
			.max(2048)
			.openapi({ example: "https://hooks.example.com/pi" }),
		events: z.array(WebhookEventType).min(1).max(webhookEventTypes.length).openapi({
			description: "The event types to deliver",
		}),
		sessions: z
			.array(z.string().min(1).max(100))
			.max(100)
			.optional()
			.openapi({ description: "Only events of these sessions (default: every session)" }),
		secret: WebhookSecret.optional().openapi({
			description: "Signing secret; generated when absent. Shown in this response only, never again",
		}),
		description: z.string().max(200).optional(),
	})
	.openapi("CreateWebhookBody");
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

const webhookShape = {
	id: z.string(),
	url: z.string(),
	events: z.array(WebhookEventType),
	sessions: z.array(z.string()).nullable(),
	description: z.string().nullable(),
	static: z.boolean().openapi({ description: "Declared in --webhooks-file: cannot be deleted through the API" }),
	createdAt: z.string().openapi({ format: "date-time" }),
};

export const Webhook = z.object(webhookShape).openapi("Webhook");
export type Webhook = z.infer<typeof Webhook>;

// Spelled out, not an extension of Webhook: an allOf would let strict validators refuse both halves.
export const CreatedWebhook = z
	.object({
		...webhookShape,
		secret: z.string().openapi({ description: "The signing secret (whsec_…): shown once, here" }),
	})
	.openapi("CreatedWebhook");

export const DeliveryState = z.enum(["pending", "delivered", "failed", "dropped"]).openapi("WebhookDeliveryState");

export const DeliveryAttempt = z.object({
	at: z.string().openapi({ format: "date-time" }),
	status: z.number().int().nullable().openapi({ description: "The receiver's HTTP status; null when none came" }),
	error: z.string().nullable(),
	durationMs: z.number().int(),
});

export const Delivery = z
	.object({
		id: z.string().openapi({ description: "The `webhook-id` header: the same on every attempt and redelivery" }),
		webhookId: z.string(),
		type: WebhookEventType,
		state: DeliveryState,
		attempts: z.number().int(),
		nextAttemptAt: z.string().nullable().openapi({ format: "date-time" }),
		createdAt: z.string().openapi({ format: "date-time" }),
		payload: z.record(z.string(), z.unknown()).openapi({ description: "The body sent (thin: ids, status, links)" }),
		log: z.array(DeliveryAttempt).openapi({ description: "The latest attempts, oldest first" }),
	})
	.openapi("WebhookDelivery");
export type Delivery = z.infer<typeof Delivery>;
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

/** One entry of --webhooks-file (a JSON array): a webhook with a fixed id and secret. */
export const StaticWebhook = CreateWebhookBody.extend({
	id: z.string().regex(/^[\w-]{1,64}$/),
	secret: WebhookSecret,
});
