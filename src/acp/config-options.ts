import type { SessionConfigOption } from "@agentclientprotocol/sdk";
import type { PiGateway, Schemas } from "../client/index.ts";

/**
 * A session's config options for the editor: the model (pi's configured models) and, when the
 * model thinks, the thinking level; read from the gateway (sessionsGet, sessionsGetModels,
 * sessionsGetThinkingLevels). A list that cannot be read offers no option rather than failing.
 */
export async function configOptions(gateway: PiGateway, id: string): Promise<SessionConfigOption[]> {
	const path = { id };
	const [session, models, levels] = await Promise.all([
		gateway.getSession(id),
		gateway
			.request("GET", "/v1/sessions/{id}/models", { path })
			.then((r) => r.models)
			.catch(() => [] as Schemas["Models"]["models"]),
		gateway
			.request("GET", "/v1/sessions/{id}/thinking-levels", { path })
			.then((r) => r.levels)
			.catch(() => [] as string[]),
	]);
	const current = session.model ? `${session.model.provider}/${session.model.id}` : undefined;
	const result: SessionConfigOption[] = [];
	if (models.length && current)
		result.push({
			id: "model",
			name: "Model",
			category: "model",
			type: "select",
			currentValue: current,
			options: models.map((m) => ({ value: `${m.provider}/${m.id}`, name: m.name ?? m.id })),
		});
	if (levels.length > 1 && session.thinkingLevel)
		result.push({
			id: "thinking_level",
			name: "Thinking",
			category: "thought_level",
			type: "select",
			currentValue: session.thinkingLevel,
			options: levels.map((level) => ({ value: level, name: level })),
		});
	return result;
}
