import { reportReach } from "./health.ts";
import type { Problem } from "./types.ts";

/** The gateway's root, relative to this page (…/console/), so a proxy's path prefix survives. */
export const apiRoot = new URL("../", location.href).href.replace(/\/$/, "");

/** A problem+json answer, as an error the screens can show. */
export class ApiError extends Error {
	constructor(
		readonly status: number,
		readonly code: string,
		detail: string,
	) {
		super(detail);
	}
}

type Options = { json?: unknown; raw?: string; headers?: Record<string, string>; signal?: AbortSignal };

/** The credential the person typed, and what to do when the gateway stops accepting it. */
export interface Credential {
	token: string;
	onUnauthorized: () => void;
}

let credential: Credential | undefined;
export const useCredential = (c: Credential | undefined) => {
	credential = c;
};

/** One JSON call of the public API with the bearer credential; problem+json becomes ApiError. */
export async function call<T>(method: string, path: string, options: Options = {}): Promise<T> {
	const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
	if (credential) headers.Authorization = `Bearer ${credential.token}`;
	if (options.json !== undefined) headers["Content-Type"] = "application/json";
	let res: Response;
	try {
		res = await fetch(apiRoot + path, {
			method,
			headers,
			body: options.json === undefined ? options.raw : JSON.stringify(options.json),
			signal: options.signal,
			credentials: "omit",
			cache: "no-store",
		});
	} catch (e) {
		if (options.signal?.aborted) throw e;
		// No HTTP answer at all: the browser says only "Failed to fetch"; say what it means.
		reportReach(false);
		throw new ApiError(
			0,
			"unreachable",
			`The gateway cannot be reached at ${new URL(apiRoot).host}: it may be stopped, or the network is down.`,
		);
	}
	// A proxy in front that answers for a gateway it cannot reach is no answer from the gateway.
	const proxied = (res.status === 502 || res.status === 504) && !res.headers.get("content-type")?.includes("problem");
	reportReach(!proxied);
	if (proxied)
		throw new ApiError(
			res.status,
			"unreachable",
			`The gateway cannot be reached (${res.status} from the proxy in front of it).`,
		);
	if (res.status === 401) credential?.onUnauthorized();
	if (!res.ok) {
		const problem = (await res.json().catch(() => ({}))) as Partial<Problem>;
		throw new ApiError(res.status, problem.code ?? "http_error", problem.detail ?? `${res.status} ${res.statusText}`);
	}
	if (res.status === 204) return undefined as T;
	const type = res.headers.get("content-type") ?? "";
	return (type.includes("json") ? await res.json() : await res.text()) as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => call<T>("GET", path, { signal });
export const post = <T>(path: string, json?: unknown) => call<T>("POST", path, { json: json ?? {} });
export const put = <T>(path: string, json: unknown) => call<T>("PUT", path, { json });
export const del = (path: string) => call<void>("DELETE", path);

/** A path segment: ids come from the API, still never pasted raw into a URL. */
export const seg = encodeURIComponent;
