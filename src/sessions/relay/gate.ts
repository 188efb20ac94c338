import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { hopByHopHeaders } from "../../net/hop-headers.ts";
import { placeholderPrefix, type RelayRoute } from "./credentials.ts";
import { resolveSecret } from "./resolve.ts";

/**
 * What the relay lets through to a provider with the operator's key (an attacker's review: it was a
 * full-account proxy, and it swapped a placeholder wherever it stood, so an upstream that echoes a
 * header or a query value handed the real key back). A call is a model call of the route's API kind
 * (`allowed`) on a plain path (`plainPath`), and a placeholder stands only where the credential goes
 * (`credentialValue`): anything else is refused before a byte leaves.
 */

/** An optional version segment before a model API's path (`/v1`, `/v1beta`, `/openai/v1`), taken off first. */
const version = /^(?:\/openai)?(?:\/v\d+(?:alpha|beta)?\d*)?/;
const post = (path: RegExp) => ({ method: "POST", path });
const listModels = { method: "GET", path: /^\/models(?:\/[^/]+)?$/ };

/** The (method, path under the base URL) each API kind of pi-ai calls, and the model list. */
const byApi: Record<string, { method: string; path: RegExp }[]> = {
	"openai-completions": [post(/^\/chat\/completions$/), post(/^\/completions$/), post(/^\/embeddings$/)],
	"mistral-conversations": [post(/^\/chat\/completions$/)],
	"openai-responses": [post(/^\/responses$/)],
	"azure-openai-responses": [post(/^\/responses$/)],
	"openai-codex-responses": [post(/^(?:\/codex)?\/responses$/)],
	"anthropic-messages": [post(/^\/messages$/), post(/^\/messages\/count_tokens$/)],
	"google-generative-ai": [post(/^\/models\/[^/:]+:(?:streamGenerateContent|generateContent|countTokens)$/)],
};
const everyApi = Object.values(byApi).flat();

/**
 * Why `path` (the raw path under the route, no query) is refused, or undefined: a percent-encoded
 * dot, slash or backslash, a backslash, an empty, `.` or `..` segment would let the upstream (or the
 * URL parser) read a path outside the base URL's prefix.
 */
export function plainPath(path: string): string | undefined {
	if (holdsPlaceholder(path)) return "a key's placeholder";
	if (/%(2e|2f|5c)|\\/i.test(path)) return "an encoded dot, slash or backslash";
	const segments = path.split("/").slice(1);
	if (path !== "" && segments.some((s) => s === "" || s === "." || s === "..")) return "an empty, `.` or `..` segment";
	return undefined;
}

/** Whether `method` on `path` (plain, under the base URL) is a call the route's model API makes. */
export function allowed(route: RelayRoute, method: string, path: string): boolean {
	let decoded: string;
	try {
		decoded = decodeURIComponent(path);
	} catch {
		return false;
	}
	const rules = route.apis.size === 0 ? everyApi : [...route.apis].flatMap((api) => byApi[api] ?? everyApi);
	const tail = decoded.replace(version, "");
	return [listModels, ...rules].some((rule) => rule.method === method && rule.path.test(tail));
}

/** Whether `text` holds something that looks like a placeholder, in any case or percent-encoding. */
export function holdsPlaceholder(text: string): boolean {
	const lower = text.toLowerCase();
	if (lower.includes(placeholderPrefix)) return true;
	try {
		return decodeURIComponent(lower.replace(/\+/g, " ")).includes(placeholderPrefix);
	} catch {
		return lower.includes("placeholder");
	}
}

/**
 * The placeholder a credential value stands for on this route, when the whole value is one of its
 * placeholders (or `Bearer ` + one) and `name` is a header it stands in: a provider key's in the
 * route's keyHeaders, a header value's in its own header only (credentials.ts Secret.headers).
 */
export function credentialValue(
	route: RelayRoute,
	name: string,
	value: string,
): { placeholder: string; bearer: boolean } | undefined {
	const bearer = /^Bearer (.+)$/i.exec(value)?.[1];
	const placeholder = route.secrets.has(value) ? value : bearer;
	const secret = placeholder === undefined ? undefined : route.secrets.get(placeholder);
	if (placeholder === undefined || !secret || !(secret.headers ?? route.keyHeaders).has(name)) return undefined;
	return { placeholder, bearer: placeholder !== value };
}

/** A call the relay refuses before anything is sent: its status, code and message. */
export class Refused extends Error {
	readonly status: number;
	readonly code: string;
	constructor(status: number, code: string, message: string) {
		super(message);
		this.status = status;
		this.code = code;
	}
}

/** Hop-by-hop headers, and those that say who is calling from where (nothing of the sandbox leaves). */
export const dropped = new Set([
	...hopByHopHeaders,
	"host",
	"accept-encoding",
	"cookie",
	"forwarded",
	"via",
	"x-forwarded-for",
	"x-forwarded-host",
	"x-forwarded-proto",
	"x-real-ip",
]);

async function real(route: RelayRoute, placeholder: string): Promise<string> {
	const secret = route.secrets.get(placeholder);
	const value = secret ? await resolveSecret(secret) : undefined;
	// A principal's own key that is missing fails the call: the operator's is not used in its place.
	// The message goes to the agent and to everyone the session is shared with: it does not say
	// where the key is (a file's path, a variable's name of the gateway's), only who is to fix it.
	if (value === undefined && secret?.own) {
		const { principal, provider } = secret.own;
		const message = `${principal}'s own key for ${provider} is unavailable; the gateway does not use the operator's key instead. Ask the operator to fix it (\`pi-gateway keys list\` says what is wrong)`;
		throw new Refused(403, "relay_own_key_unavailable", message);
	}
	if (value === undefined)
		throw new Refused(502, "relay_key_unavailable", `the key for ${route.provider} did not resolve`);
	return value;
}

const misplaced = (where: string) =>
	new Refused(
		400,
		"relay_placeholder_misplaced",
		`A key's placeholder in ${where}: the relay puts keys only where the provider reads them`,
	);

/**
 * The query and headers sent upstream: a placeholder becomes the real key only as the whole value of
 * a credential header (or `Bearer ` + it), or of `key=` for a provider keyed in the query. Anywhere
 * else (another header, another parameter, the path, a cookie) the call is refused.
 */
export async function outgoing(
	route: RelayRoute,
	path: string,
	query: string,
	incoming: IncomingHttpHeaders,
): Promise<{ query: string; headers: OutgoingHttpHeaders }> {
	if (holdsPlaceholder(path)) throw misplaced("the path");
	const params = new URLSearchParams(query.replace(/^\?/, ""));
	let swapped = false;
	for (const [name, value] of params) {
		if (!holdsPlaceholder(name) && !holdsPlaceholder(value)) continue;
		// A provider key's placeholder only (a header value's goes in its header alone).
		const key = route.queryKey && name === "key" ? route.secrets.get(value) : undefined;
		if (!key || key.headers) throw misplaced(`the query (${name})`);
		params.set(name, await real(route, value));
		swapped = true;
	}
	const headers: OutgoingHttpHeaders = {};
	for (const [name, value] of Object.entries(incoming)) {
		if (value === undefined) continue;
		const values = Array.isArray(value) ? value : [value];
		if (!values.some(holdsPlaceholder)) {
			if (!dropped.has(name)) headers[name] = value;
			continue;
		}
		const found = values.length === 1 ? credentialValue(route, name, values[0] as string) : undefined;
		if (!found || dropped.has(name)) throw misplaced(`the ${name} header`);
		const key = await real(route, found.placeholder);
		headers[name] = found.bearer ? `Bearer ${key}` : key;
	}
	return { query: swapped ? `?${params}` : query, headers };
}
