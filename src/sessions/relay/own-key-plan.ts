import { findEnvKeys } from "@earendil-works/pi-ai/compat";
import { getBuiltinProviders } from "@earendil-works/pi-ai/providers/all";
import { placeholderPrefix, type RelayPlan, type Secret } from "./credentials.ts";

/**
 * A principal's own provider keys in its sessions' relay plan (issue 42 item 5). Each provider-key
 * placeholder of a provider the principal has a key for (the operator's models.json apiKey, auth.json
 * key, environment variable) stands for the principal's key instead, on every route of that
 * provider: pi is unchanged, the relay puts the principal's key where it put the operator's. A
 * header value of the operator's models.json (Secret.headers) stays the operator's. A key that
 * does not resolve at a call refuses the call (gate.ts): the operator's is never used in its place.
 */

const builtin = new Set<string>(getBuiltinProviders());

/** Every variable pi-ai reads a built-in provider's key from (each answered, to list them all). */
function keyVariables(provider: string): string[] {
	const every = new Proxy({} as Record<string, string>, { get: () => "set", has: () => true });
	return findEnvKeys(provider, every) ?? [];
}

/**
 * For a built-in provider the principal has a key for and the operator has none in the environment:
 * its first key variable is set in `source` and `childEnv` (copies), so that relayPlan gives it a
 * route and pi a placeholder there, as for an operator's key; applyOwnKeys then makes the
 * placeholder the principal's. (Its `$NAME` would find nothing in the gateway's environment.)
 */
export function withOwnKeyVariables(
	source: NodeJS.ProcessEnv,
	childEnv: Record<string, string>,
	own: ReadonlyMap<string, string>,
): { source: NodeJS.ProcessEnv; childEnv: Record<string, string> } {
	const out = { source: { ...source }, childEnv: { ...childEnv } };
	for (const provider of own.keys()) {
		if (!builtin.has(provider)) continue;
		const names = keyVariables(provider);
		const first = names[0];
		if (!first || names.some((name) => source[name])) continue;
		out.source[first] = "own";
		out.childEnv[first] = "";
	}
	return out;
}

function ownSecret(principal: string, provider: string, source: string): Secret {
	const own = { principal, provider, source };
	return source.startsWith("file:") ? { value: "", file: source.slice(5), own } : { value: `$${source.slice(4)}`, own };
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** Makes every provider-key placeholder of `own`'s providers in `plan` stand for `principal`'s key. */
export function applyOwnKeys(plan: RelayPlan, principal: string, own: ReadonlyMap<string, string>): void {
	for (const [provider, source] of own) {
		const secret = ownSecret(principal, provider, source);
		const routes = [...plan.routes.values()].filter((r) => r.provider === provider);
		let keyed = false;
		for (const route of routes)
			for (const [placeholder, s] of route.secrets)
				if (!s.headers) {
					route.secrets.set(placeholder, secret);
					keyed = true;
				}
		// A models.json provider the operator gave no key: pi gets a placeholder as its apiKey.
		const providers = isObject(plan.modelsJson.providers) ? plan.modelsJson.providers : {};
		const conf = Object.hasOwn(providers, provider) ? providers[provider] : undefined;
		if (keyed || routes.length === 0 || !isObject(conf)) continue;
		const placeholder = `${placeholderPrefix}own-${provider.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
		conf.apiKey = placeholder;
		for (const route of routes) route.secrets.set(placeholder, secret);
	}
}
