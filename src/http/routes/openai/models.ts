import { GatewayError as ClientError, type PiGateway } from "../../../client/index.ts";
import type { Config } from "../../../config/config.ts";
import { ApiError } from "../../transport/problem.ts";
import { inner } from "./caller.ts";
import type { OpenAIModel } from "./models.schemas.ts";

/** How long pi's list is kept: it changes with the operator's configuration, not per request. */
const listTtlMs = 5 * 60_000;

type Listed = { at: number; models: OpenAIModel[] };

const asModel = (provider: string, id: string, at: number): OpenAIModel => ({
	id: `${provider}/${id}`,
	object: "model",
	created: Math.floor(at / 1000),
	owned_by: provider,
});

/**
 * The gateway's models: pi's `get_available_models` for a plain session (the providers the operator
 * configured, the demo model when it is on). pi alone knows them, so the list is read from a session
 * started with the caller's key for that purpose (and deleted), then kept for everyone: it is the
 * gateway's configuration, the same for every principal.
 */
export class ModelCatalog {
	#listed: Listed | undefined;
	readonly #config: Config;

	constructor(config: Config) {
		this.#config = config;
	}

	async list(gw: PiGateway): Promise<OpenAIModel[]> {
		if (this.#listed && Date.now() - this.#listed.at < listTtlMs) return this.#listed.models;
		let id: string;
		try {
			id = (await gw.createSession({ name: "openai: models", persist: false })).id;
		} catch (error) {
			// A key that may not start a session (sessions:read only), or one at its session cap.
			if (error instanceof ClientError && (error.status === 403 || error.status === 429)) return this.#defaults();
			throw error;
		}
		try {
			const answer = await inner(gw.request("GET", "/v1/sessions/{id}/models", { path: { id } }));
			const at = Date.now();
			const models = Array.isArray(answer?.models) ? answer.models : [];
			this.#listed = { at, models: models.map((m) => asModel(m.provider, m.id, at)) };
			return this.#listed.models;
		} finally {
			await gw.request("DELETE", "/v1/sessions/{id}", { path: { id }, query: { purge: "true" } }).catch(() => {});
		}
	}

	/** The gateway's default model, from its configuration: all a key that cannot start pi is told. */
	#defaults(): OpenAIModel[] {
		const { demo, provider, model } = this.#config;
		const at = Date.now();
		if (demo) return [asModel("pi-gateway-demo", "demo", at)];
		if (provider && model) return [asModel(provider, model, at)];
		return model ? [{ id: model, object: "model", created: Math.floor(at / 1000), owned_by: "pi" }] : [];
	}
}

/** A session's model: one of the catalog's, `provider/id`, or an id only one provider offers. */
export async function resolveModel(catalog: ModelCatalog, gw: PiGateway, name: string) {
	const models = await inner(catalog.list(gw));
	const byId = models.filter((m) => m.id.slice(m.owned_by.length + 1) === name);
	const found = models.find((m) => m.id === name) ?? (byId.length === 1 ? byId[0] : undefined);
	if (!found) throw modelNotFound(name, `the gateway's models are ${models.map((m) => m.id).join(", ") || "none"}`);
	const slash = found.id.indexOf("/");
	return slash > 0 ? { provider: found.id.slice(0, slash), model: found.id.slice(slash + 1) } : { model: found.id };
}

export function modelNotFound(name: string, why: string): ApiError {
	return new ApiError(404, "model_not_found", `The model \`${name}\` does not exist: ${why}`, {
		param: "model",
	} as never);
}
