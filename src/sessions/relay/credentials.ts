import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { findEnvKeys } from "@earendil-works/pi-ai/compat";
import { getBuiltinModels, getBuiltinProviders } from "@earendil-works/pi-ai/providers/all";

/**
 * What a sandboxed pi is given instead of the operator's provider keys, and what the relay puts
 * back (gondolin's way): every key pi could use, from the gateway's environment, the operator's
 * models.json or auth.json, is replaced by a placeholder, and every provider with a key gets a
 * base URL on the relay (`http://127.0.0.1:<port>/<route>`, the forwarder inside the sandbox). The
 * relay swaps a placeholder for the real value only on the route of the provider it belongs to,
 * and sends the call to that provider's real base URL. pi keeps choosing which key it uses.
 */

/** A value as the operator wrote it: a literal, `$NAME`/`${NAME}`, or `!command` (pi's rules). */
export interface Secret {
	value: string;
	/** auth.json's per-credential variables, looked up before the gateway's environment. */
	env?: Record<string, string>;
	/**
	 * A header value's: the header (lower case) it was written for, the only one its placeholder is
	 * swapped in. Absent: a provider key's, swapped in the route's keyHeaders (and `key=` where the
	 * route takes one). An attacker's review: with every header the operator lists (OpenRouter's
	 * X-Title, HTTP-Referer) a credential header of the whole route, a tool sent `X-Title: <the key's
	 * placeholder>` and the upstream got the real key in a header it shows.
	 */
	headers?: Set<string>;
	/** A principal's own key kept in a file (config/own-keys.ts): read at each call, `value` unused. */
	file?: string;
	/** A principal's own key (own-key-plan.ts): where it is, said when it does not resolve. */
	own?: { principal: string; provider: string; source: string };
}

export interface ModelCost {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
}

export interface RelayRoute {
	provider: string;
	/** The provider's real base URL (pi appends /chat/completions, /v1/messages, …). */
	upstream: string;
	/** Placeholder → the value it stands for, on this route only. */
	secrets: Map<string, Secret>;
	/** Prices per million tokens by model id, for the cost the relay counts. */
	costs: Map<string, ModelCost>;
	/** The headers (lower case) a provider key's placeholder is swapped in (a header value's: Secret.headers). */
	keyHeaders: Set<string>;
	/** pi-ai's API kinds of the route's models (what calls gate.ts lets through); empty: unknown. */
	apis: Set<string>;
	/** The key may go in the query's `key=` (Gemini's API). */
	queryKey: boolean;
}

/** The headers a provider's key is sent in by pi-ai's SDKs (a models.json header's value goes in its own). */
export const keyHeaders = ["authorization", "x-api-key", "api-key", "x-goog-api-key"];

export interface RelayPlan {
	routes: Map<string, RelayRoute>;
	/** Set over pi's environment (undefined removes). */
	env: Record<string, string | undefined>;
	/** models.json and auth.json as the sandbox gets them: placeholders, base URLs on the relay. */
	modelsJson: Record<string, unknown>;
	authJson: Record<string, unknown>;
}

/**
 * A provider's fields in pi's models.json schema (schemas/models.schema.json): only these reach the
 * sandbox. Of them pi resolves like a key `apiKey` and every value of `headers`, of `models[].headers`
 * and of `modelOverrides.<id>.headers`; each becomes a placeholder (test/unit/relay-credentials.test.ts
 * reads the schema for every field it says resolves so).
 */
export const providerFields = [
	...["name", "baseUrl", "apiKey", "api", "oauth", "headers"],
	...["compat", "authHeader", "models", "modelOverrides"],
];

/** The prefix every placeholder starts with: nothing the agent can read holds a real key. */
export const placeholderPrefix = "pi-gateway-placeholder-";

/**
 * Variables that hold a credential (or name a file of one), from the list child-env.ts passes: each
 * is replaced by a placeholder when a provider reads it, and removed from a sandboxed pi otherwise
 * (AWS keys for Bedrock, Google's service-account file: what the relay cannot put back, see
 * docs/security.md). Proxies go too: pi has no network but the relay's, which is on loopback.
 */
const credentialName =
	/(_API_KEY|_TOKEN|_SECRET|_ACCESS_KEY|_ACCESS_KEY_ID|_SECRET_ACCESS_KEY|_SESSION_TOKEN|_CREDENTIALS|_PROFILE)$|^AWS_|^ANTHROPIC_(AUTH|OAUTH|API|FEDERATION|IDENTITY|SERVICE)|^CLOUDSDK_CONFIG$|^(HTTPS?|ALL|NO)_PROXY$/i;

const builtin = new Map(getBuiltinProviders().map((p) => [p as string, getBuiltinModels(p)]));

function readJson(path: string): Record<string, unknown> {
	if (!existsSync(path)) return {};
	try {
		const value = JSON.parse(readFileSync(path, "utf8"));
		return value && typeof value === "object" && !Array.isArray(value) ? value : {};
	} catch {
		return {};
	}
}

const definedOnly = (env: NodeJS.ProcessEnv) =>
	Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));

const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === "object" && !Array.isArray(v);

/** The one base URL a built-in provider's models share, with `{NAME}` filled from the environment. */
function builtinBase(provider: string, env: NodeJS.ProcessEnv): string | undefined {
	const urls = new Set((builtin.get(provider) ?? []).map((m) => m.baseUrl));
	if (urls.size !== 1) return undefined;
	const [url] = [...urls] as [string];
	if (!url) return undefined;
	return url.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name) => env[name] ?? whole);
}

function apisOf(provider: string, conf: Record<string, unknown> | undefined, models: unknown): Set<string> {
	const apis = new Set<string>();
	for (const m of builtin.get(provider) ?? []) if (typeof m.api === "string") apis.add(m.api);
	if (typeof conf?.api === "string") apis.add(conf.api);
	if (Array.isArray(models)) for (const m of models) if (isObject(m) && typeof m.api === "string") apis.add(m.api);
	return apis;
}

function costsOf(provider: string, models: unknown): Map<string, ModelCost> {
	const costs = new Map<string, ModelCost>();
	for (const m of builtin.get(provider) ?? []) if (m.cost) costs.set(m.id, m.cost);
	if (Array.isArray(models))
		for (const m of models)
			if (isObject(m) && typeof m.id === "string" && isObject(m.cost)) costs.set(m.id, m.cost as ModelCost);
	return costs;
}

/**
 * The plan for one spawn: `source` is the gateway's environment, `childEnv` what pi would get,
 * `agentDir` the operator's pi folder, `relayBase` the relay's address inside the sandbox.
 */
export function relayPlan(
	source: NodeJS.ProcessEnv,
	childEnv: Record<string, string>,
	agentDir: string,
	relayBase: string,
	passEnv: readonly string[] = [],
): RelayPlan {
	const routes = new Map<string, RelayRoute>();
	const env: Record<string, string | undefined> = {};
	const models = readJson(join(agentDir, "models.json"));
	const auth = readJson(join(agentDir, "auth.json"));
	const providersIn = isObject(models.providers) ? models.providers : {};
	let count = 0;
	const route = (id: string, provider: string, upstream: string, modelList?: unknown) => {
		let r = routes.get(id);
		if (!r) {
			const conf = isObject(providersIn[provider]) ? providersIn[provider] : undefined;
			const apis = apisOf(provider, conf, modelList);
			const queryKey = apis.has("google-generative-ai");
			r = {
				provider,
				upstream,
				secrets: new Map(),
				costs: costsOf(provider, modelList),
				keyHeaders: new Set(keyHeaders),
				apis,
				queryKey,
			};
			routes.set(id, r);
		}
		return r;
	};
	const hide = (r: RelayRoute | undefined, label: string, secret: Secret) => {
		const placeholder = `${placeholderPrefix}${++count}-${label.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
		r?.secrets.set(placeholder, secret);
		return placeholder;
	};
	// A `headers` object (a provider's, a model's, a model override's): each value resolves like a
	// key (pi's schema), so each is a placeholder the relay swaps in that header only.
	const hideHeaders = (r: RelayRoute | undefined, provider: string, headers: Record<string, unknown>) =>
		Object.fromEntries(
			Object.entries(headers).map(([k, v]) => [
				k,
				typeof v === "string" ? hide(r, `${provider}-${k}`, { value: v, headers: new Set([k.toLowerCase()]) }) : v,
			]),
		);
	const outProviders: Record<string, unknown> = {};
	const relayUrl = (id: string) => `${relayBase}/${encodeURIComponent(id)}`;

	// The operator's models.json: every provider, its keys and headers, its models' own base URLs.
	for (const [provider, conf] of Object.entries(providersIn)) {
		if (!isObject(conf)) continue;
		// Only what pi's schema knows: a secret kept under another name is not the agent's to read.
		const out: Record<string, any> = Object.fromEntries(
			Object.entries(conf).filter(([k]) => providerFields.includes(k)),
		);
		const upstream = typeof conf.baseUrl === "string" ? conf.baseUrl : builtinBase(provider, source);
		const r = upstream ? route(provider, provider, upstream, conf.models) : undefined;
		if (r) out.baseUrl = relayUrl(provider);
		if (typeof conf.apiKey === "string") out.apiKey = hide(r, `${provider}-key`, { value: conf.apiKey });
		if (isObject(conf.headers)) out.headers = hideHeaders(r, provider, conf.headers);
		// Before the models: a model with its own base URL gets the provider's placeholders, these too.
		if (isObject(conf.modelOverrides))
			out.modelOverrides = Object.fromEntries(
				Object.entries(conf.modelOverrides).map(([id, o]) => [
					id,
					isObject(o) && isObject(o.headers) ? { ...o, headers: hideHeaders(r, provider, o.headers) } : o,
				]),
			);
		if (Array.isArray(conf.models))
			out.models = conf.models.map((m: unknown, i: number) => {
				if (!isObject(m)) return m;
				const model: Record<string, any> = { ...m };
				const own = typeof m.baseUrl === "string" ? route(`${provider}~${i}`, provider, m.baseUrl, conf.models) : r;
				if (own !== r) {
					model.baseUrl = relayUrl(`${provider}~${i}`);
					// The provider's key and headers (its overrides' too) are sent to this model's URL.
					if (r) for (const [k, v] of r.secrets) own?.secrets.set(k, v);
				}
				if (isObject(m.headers)) model.headers = hideHeaders(own, provider, m.headers);
				return model;
			});
		outProviders[provider] = out;
	}

	// auth.json: API keys become placeholders; OAuth logins stay out of the sandbox (docs/security.md).
	const outAuth: Record<string, unknown> = {};
	for (const [provider, credential] of Object.entries(auth)) {
		if (!isObject(credential) || credential.type !== "api_key" || typeof credential.key !== "string") continue;
		const upstream = routes.get(provider)?.upstream ?? builtinBase(provider, source);
		const r = upstream ? route(provider, provider, upstream) : undefined;
		outAuth[provider] = {
			type: "api_key",
			key: hide(r, `${provider}-auth`, {
				value: credential.key,
				env: isObject(credential.env) ? credential.env : undefined,
			}),
		};
	}

	// The environment: each provider's key variables, as pi-ai reads them.
	const passed = new Set(passEnv);
	for (const provider of builtin.keys()) {
		for (const name of findEnvKeys(provider, definedOnly(source)) ?? []) {
			const value = source[name];
			if (!value || !(name in childEnv) || passed.has(name)) continue;
			const upstream = routes.get(provider)?.upstream ?? builtinBase(provider, source);
			const r = upstream ? route(provider, provider, upstream) : undefined;
			if (!r) continue;
			const placeholder = `${placeholderPrefix}env-${name}`;
			r.secrets.set(placeholder, { value: `$${name}` });
			env[name] = placeholder;
		}
	}
	for (const name of Object.keys(childEnv))
		if (env[name] === undefined && !passed.has(name) && credentialName.test(name)) env[name] = undefined;

	// A built-in provider keyed by the environment or auth.json: its base URL on the relay.
	for (const id of routes.keys())
		if (!id.includes("~") && !outProviders[id]) outProviders[id] = { baseUrl: relayUrl(id) };
	const modelsJson = {
		...(typeof models.$schema === "string" ? { $schema: models.$schema } : {}),
		providers: outProviders,
	};
	return { routes, env, modelsJson, authJson: outAuth };
}
