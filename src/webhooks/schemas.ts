import { z } from "@hono/zod-openapi";

export const webhookEventTypes = [
	"approval.requested",
	"approval.resolved",
	"tool_call.requested",
	"tool_call.resolved",
	"run.settled",
	"session.exited",
	"session.crashed",
	"schedule.fired",
	"schedule.failed",
] as const;
export const WebhookEventType = z.enum(webhookEventTypes).openapi("WebhookEventType", {
	description:
		"What a webhook can be told of: a dialog or client tool call asked or settled, a run settled, pi exited or crashed, a schedule's tick fired (a run started or was queued) or failed (docs/schedules.md)",
});
export type WebhookEventType = z.infer<typeof WebhookEventType>;

/** Standard Webhooks secrets: `whsec_` then base64 of 24 to 64 random bytes. */
export const WebhookSecret = z
	.string()
	.regex(/^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/, "a Standard Webhooks secret: whsec_ then base64 of 24-64 bytes")
	.openapi({ description: "A Standard Webhooks signing secret", example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" });

export const CreateWebhookBody = z
	.strictObject({
		url: z
			.url({ protocol: /^https?$/, error: "an http:// or https:// URL" })
			.max(2048)
			.openapi({ description: "Where deliveries are POSTed (http or https)", example: "https://hooks.example.com/pi" }),
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
		description: z.string().max(200).optional().describe("A note for people: what the webhook is for"),
	})
	.openapi("CreateWebhookBody", {
		description: "A webhook to register",
		example: {
			url: "https://hooks.example.com/pi",
			events: ["approval.requested"],
			description: "Pager for approvals",
		},
	});
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

const webhookShape = {
	id: z.string().describe("The webhook's id"),
	url: z.string().describe("Where deliveries are POSTed"),
	events: z.array(WebhookEventType).describe("The event types it is told of"),
	sessions: z.array(z.string()).nullable().describe("Only these sessions' events; null: every session's"),
	description: z.string().nullable().describe("The note it was registered with; null if none"),
	static: z.boolean().openapi({ description: "Declared in --webhooks-file: cannot be deleted through the API" }),
	createdAt: z.string().openapi({ format: "date-time", description: "When it was registered" }),
};

/** A webhook as the API answers it, for the spec's examples. */
export const webhookExample = {
	id: "wh_Qm9wYXJ0aWFs",
	url: "https://hooks.example.com/pi",
	events: ["approval.requested"],
	sessions: null,
	description: "Pager for approvals",
	static: false,
	createdAt: "2026-12-01T10:00:00.000Z",
};

export const Webhook = z.object(webhookShape).openapi("Webhook", {
	description: "A registered webhook (its secret is never shown again)",
	example: webhookExample,
});
export type Webhook = z.infer<typeof Webhook>;

// Spelled out, not an extension of Webhook: an allOf would let strict validators refuse both halves.
export const CreatedWebhook = z
	.object({
		...webhookShape,
		secret: z.string().openapi({ description: "The signing secret (whsec_…): shown once, here" }),
	})
	.openapi("CreatedWebhook", {
		description: "A webhook just registered, with its signing secret (shown this once)",
		example: { ...webhookExample, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
	});

export const DeliveryState = z.enum(["pending", "delivered", "failed", "dropped"]).openapi("WebhookDeliveryState", {
	description:
		"`pending`: to be (re)tried; `delivered`: a receiver answered 2xx; `failed`: every attempt failed; `dropped`: left out (too many pending for the webhook)",
});

export const DeliveryAttempt = z.object({
	at: z.string().openapi({ format: "date-time", description: "When the attempt was made" }),
	status: z.number().int().nullable().openapi({ description: "The receiver's HTTP status; null when none came" }),
	error: z.string().nullable().describe("Why it failed; null when the receiver answered"),
	durationMs: z.number().int().describe("How long it took, in milliseconds"),
});

/** A delivery as the API answers it, for the spec's examples. */
export const deliveryExample = {
	id: "msg_Qm9wYXJ0aWFsX2Jh",
	webhookId: "wh_Qm9wYXJ0aWFs",
	type: "approval.requested",
	state: "delivered",
	attempts: 1,
	nextAttemptAt: null,
	createdAt: "2026-12-01T10:00:02.000Z",
	payload: {
		type: "approval.requested",
		timestamp: "2026-12-01T10:00:02.000Z",
		data: {
			sessionId: "ses_Qm9wYXJ0aWFs",
			approvalId: "3f1c2a9e-5d7b-4c1e-9a0f-6b8d2e4f1a3c",
			method: "select",
			status: "pending",
			links: {
				session: "/v1/sessions/ses_Qm9wYXJ0aWFs",
				approval: "/v1/sessions/ses_Qm9wYXJ0aWFs/approvals/3f1c2a9e-5d7b-4c1e-9a0f-6b8d2e4f1a3c",
			},
		},
	},
	log: [{ at: "2026-12-01T10:00:02.100Z", status: 200, error: null, durationMs: 42 }],
};

export const Delivery = z
	.object({
		id: z.string().openapi({ description: "The `webhook-id` header: the same on every attempt and redelivery" }),
		webhookId: z.string().describe("The webhook it goes to"),
		type: WebhookEventType,
		state: DeliveryState,
		attempts: z.number().int().describe("Attempts made so far"),
		nextAttemptAt: z
			.string()
			.nullable()
			.openapi({ format: "date-time", description: "When it is tried next; null when it is not" }),
		createdAt: z.string().openapi({ format: "date-time", description: "When the event happened" }),
		payload: z.record(z.string(), z.unknown()).openapi({ description: "The body sent (thin: ids, status, links)" }),
		log: z.array(DeliveryAttempt).openapi({ description: "The latest attempts, oldest first" }),
	})
	.openapi("WebhookDelivery", { description: "One event's delivery to one webhook", example: deliveryExample });
export type Delivery = z.infer<typeof Delivery>;
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

/** One entry of --webhooks-file (a JSON array): a webhook with a fixed id and secret. */
export const StaticWebhook = CreateWebhookBody.extend({
	id: z.string().regex(/^[\w-]{1,64}$/),
	secret: WebhookSecret,
});
