import { z } from "@hono/zod-openapi";

export const OpenAIModel = z
	.object({
		id: z.string().openapi({
			description: "`provider/id`, as the gateway's sessions name a model (`model` of a request takes it)",
			example: "pi-gateway-demo/demo",
		}),
		object: z.literal("model").openapi({ description: "Always `model`" }),
		created: z.number().int().openapi({ description: "Unix seconds: when the gateway read pi's list" }),
		owned_by: z.string().openapi({ description: "The model's provider", example: "pi-gateway-demo" }),
	})
	.openapi("OpenAIModel", {
		description: "A model pi offers with the gateway's configured providers (OpenAI's `Model`)",
		example: { id: "pi-gateway-demo/demo", object: "model", created: 1764583200, owned_by: "pi-gateway-demo" },
	});
export type OpenAIModel = z.infer<typeof OpenAIModel>;

export const OpenAIModelList = z
	.object({
		object: z.literal("list").openapi({ description: "Always `list`" }),
		data: z.array(OpenAIModel).describe("Every model, as `GET /v1/models/{model}` answers it"),
	})
	.openapi("OpenAIModelList", {
		description: "The gateway's models (OpenAI's `ListModelsResponse`)",
		example: {
			object: "list",
			data: [{ id: "pi-gateway-demo/demo", object: "model", created: 1764583200, owned_by: "pi-gateway-demo" }],
		},
	});

export const ModelParams = z.object({
	model: z
		.string()
		.min(1)
		.max(300)
		.openapi({
			param: { name: "model", in: "path" },
			description: "A model's id, `provider/id` (its slash percent-encoded, as the OpenAI SDKs send it)",
			example: "pi-gateway-demo%2Fdemo",
		}),
});
