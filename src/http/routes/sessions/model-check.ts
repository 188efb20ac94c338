import type { CreateSessionBody } from "../../../sessions/process/index.ts";
import { type Session, unwrap } from "../../../sessions/session/index.ts";
import { ApiError } from "../../transport/problem.ts";

type ModelRef = { provider: string; id: string };
const named = (model: ModelRef) => `${model.provider}/${model.id}`;

/**
 * A model pi cannot run: the answer to a create that asked for it, once pi is up. pi starts on an
 * unknown model id (it makes one up for a known provider) and on a provider it has no credentials
 * for, and says so only at the first prompt, with advice for its own terminal ("Use /login"). So
 * the session's model must be one of those pi offers (`get_available_models`, as `GET …/models`).
 * Undefined when the model is fine, or when pi's list could not be read: then the session stays,
 * as it would have without the check.
 */
export async function unavailableModel(session: Session, body: CreateSessionBody): Promise<ApiError | undefined> {
	if (body.model === undefined && body.provider === undefined) return undefined;
	let available: ModelRef[];
	try {
		const response = await session.request({ type: "get_available_models", id: session.nextCommandId() });
		available = (unwrap(response) as { models?: ModelRef[] } | undefined)?.models as ModelRef[];
	} catch {
		return undefined;
	}
	if (!Array.isArray(available)) return undefined;
	const current = session.piState.model;
	if (current && available.some((m) => m.provider === current.provider && m.id === current.id)) return undefined;
	const asked = [body.provider, body.model].filter(Boolean).join("/");
	const models = available.map(named);
	return new ApiError(
		422,
		"unknown_model",
		`pi has no usable model ${JSON.stringify(asked)}${current ? ` (it resolved to ${named(current)})` : ""}: not one of its models, or its provider has no credentials; available: ${models.join(", ") || "none"}`,
		{ models },
	);
}
