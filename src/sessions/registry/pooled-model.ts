import { existsSync } from "node:fs";
import { join } from "node:path";
import type { PiResponse } from "../../pi/protocol.ts";
import { readAgentFile } from "../../shared/paths.ts";
import type { CreateSessionBody } from "../process/spawn.ts";
import type { Session } from "../session/session.ts";
import type { Pooled } from "./warm-pool.ts";

/** pi's own default thinking level (core/defaults.js), where no setting names one. */
const piDefaultThinking = "medium";

/**
 * A create a warm-pool pi can serve: nothing but a name, and a model named by provider and id
 * and a thinking level, which are set on the pooled pi (fitModel) instead of pooling per model.
 * A model without its provider is left to pi's own resolution at a cold start (fuzzy, by id
 * across providers, a `:level` suffix): the gateway does not guess which one pi would pick.
 */
export function isPoolable(body: CreateSessionBody): boolean {
	if ((body.provider === undefined) !== (body.model === undefined)) return false;
	if (body.model?.includes(":")) return false;
	return isPlain(body);
}

const plainKeys = new Set(["name", "provider", "model", "thinkingLevel"]);

/**
 * Created with nothing a pooled pi lacks: a name, a model and a thinking level at most (persistent).
 * What a wake on a pooled pi needs too (pooled-wake.ts), where the model and level come from the file.
 */
export function isPlain(body: CreateSessionBody): boolean {
	return Object.entries(body).every(([key, value]) => (key === "persist" ? value === true : plainKeys.has(key)));
}

/**
 * Makes a pooled pi, started on the default model, what a cold start with `--provider`,
 * `--model` and `--thinking` would be: pi's set_model (which never writes pi's settings from
 * RPC) and set_thinking_level. False when that cannot be promised, and the caller starts one cold:
 * - pi has no such usable model (its set_model refuses): a cold start says what it says;
 * - a switch without a level asked for keeps the pooled pi's level where no setting names one,
 *   while a cold start takes pi's default (medium): so a switch to a model that reasons is served
 *   only where the agent folder's settings name the default level, or the pooled pi's is pi's
 *   default; per-model levels (modelThinkingLevels) or a project's .pi folder: cold.
 */
export async function fitModel(pooled: Pooled, body: CreateSessionBody): Promise<boolean> {
	const { session } = pooled;
	const ok = (response: PiResponse) => response.success;
	if (body.provider !== undefined && body.model !== undefined) {
		const current = session.piState.model;
		if (current?.provider !== body.provider || current.id !== body.model) {
			const level = session.piState.thinkingLevel;
			const answer = await session.request({ type: "set_model", provider: body.provider, modelId: body.model });
			if (!ok(answer)) return false;
			const reasons = (answer as { data?: { reasoning?: unknown } }).data?.reasoning === true;
			if (reasons && body.thinkingLevel === undefined && !levelAsCold(pooled, session, level)) return false;
		}
	}
	if (body.thinkingLevel !== undefined)
		return ok(await session.request({ type: "set_thinking_level", level: body.thinkingLevel }));
	return true;
}

/** Whether pi's switch to another model picks the level a cold start would (see fitModel). */
function levelAsCold(pooled: Pooled, session: Session, before: string | undefined): boolean {
	if (!pooled.agentDir || existsSync(join(session.cwd, ".pi"))) return false;
	let settings: { defaultThinkingLevel?: unknown; modelThinkingLevels?: unknown } = {};
	const file = join(pooled.agentDir.path, "settings.json");
	// The agent folder is the agent's to write: never a read that could block on a FIFO or follow a link.
	if (existsSync(file)) {
		const text = readAgentFile(file, 1024 * 1024);
		if (text === undefined) return false;
		try {
			settings = JSON.parse(text.toString("utf8").replace(/^\uFEFF/, ""));
		} catch {
			return false;
		}
	}
	if (!settings || typeof settings !== "object") return false;
	const perModel = settings.modelThinkingLevels;
	if (perModel && typeof perModel === "object" && Object.keys(perModel).length > 0) return false;
	return typeof settings.defaultThinkingLevel === "string" || before === piDefaultThinking;
}
