import { GatewayError } from "./errors.ts";

export interface ClientOptions {
	/** The gateway's origin, e.g. http://127.0.0.1:8787 (a trailing slash is fine). */
	baseUrl: string;
	/** A bearer token or API key; sent as `Authorization: Bearer …`. */
	token?: string;
	/** Headers sent with every request. */
	headers?: Record<string, string>;
	/** The fetch to use (default: the global one). */
	fetch?: typeof fetch;
	/** Reconnection of broken streams. */
	reconnect?: ReconnectOptions;
	/**
	 * The most characters one event stream frame may hold (about its bytes); past it the stream
	 * fails with FrameTooLarge and is not resumed (the frame would come again). Default: no bound.
	 */
	maxFrameChars?: number;
}

export interface ReconnectOptions {
	/** Wait before a reconnect when the server sent no `retry:` (default 500 ms). */
	delayMs?: number;
	/** Failed reconnects in a row before the stream gives up (default 10; a frame received resets the count). */
	maxAttempts?: number;
	/** Told of each cut before the stream reconnects: where it resumes (the last event id) and why it broke. */
	onCut?: (cut: { after: number | undefined; reason: string }) => void;
}

export interface SendOptions {
	path?: Record<string, string | number>;
	query?: Record<string, string | number | boolean | undefined>;
	/** JSON body (objects) or raw bytes/text, sent as they are. */
	body?: unknown;
	headers?: Record<string, string>;
	signal?: AbortSignal;
}

/** The one place requests are made: URL, auth, JSON bodies, and problem+json on failure. */
export class Transport {
	readonly baseUrl: string;
	readonly reconnect: Required<Omit<ReconnectOptions, "onCut">> & Pick<ReconnectOptions, "onCut">;
	readonly maxFrameChars: number | undefined;
	readonly #token: string | undefined;
	readonly #headers: Record<string, string>;
	readonly #fetch: typeof fetch;

	constructor(options: ClientOptions) {
		this.baseUrl = options.baseUrl.replace(/\/+$/, "");
		this.#token = options.token;
		this.#headers = options.headers ?? {};
		this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
		this.reconnect = { delayMs: 500, maxAttempts: 10, ...options.reconnect };
		this.maxFrameChars = options.maxFrameChars;
	}

	url(path: string, params?: SendOptions["path"], query?: SendOptions["query"]): string {
		const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
			const value = params?.[name];
			if (value === undefined) throw new TypeError(`${path}: the path parameter ${name} is missing`);
			return encodeURIComponent(String(value));
		});
		const search = new URLSearchParams();
		for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(key, String(value));
		const qs = search.toString();
		return `${this.baseUrl}${filled}${qs ? `?${qs}` : ""}`;
	}

	/** Sends one request; a non-2xx answer is thrown as a GatewayError, anything else returned unread. */
	async send(method: string, path: string, options: SendOptions = {}): Promise<Response> {
		const headers = new Headers(this.#headers);
		if (this.#token) headers.set("authorization", `Bearer ${this.#token}`);
		for (const [key, value] of Object.entries(options.headers ?? {})) headers.set(key, value);
		let body: RequestInit["body"];
		const raw = options.body;
		if (raw instanceof Uint8Array || raw instanceof ArrayBuffer || raw instanceof Blob || typeof raw === "string") {
			body = raw as RequestInit["body"];
			if (!headers.has("content-type")) headers.set("content-type", "application/octet-stream");
		} else if (raw instanceof ReadableStream) {
			body = raw;
			if (!headers.has("content-type")) headers.set("content-type", "application/octet-stream");
		} else if (raw !== undefined) {
			body = JSON.stringify(raw);
			headers.set("content-type", "application/json");
		}
		if (!headers.has("accept")) headers.set("accept", "application/json");
		const init: RequestInit & { duplex?: "half" } = { method, headers, body, signal: options.signal };
		if (body instanceof ReadableStream) init.duplex = "half";
		const res = await this.#fetch(this.url(path, options.path, options.query), init);
		if (!res.ok && res.status !== 304) throw await GatewayError.from(res);
		return res;
	}

	/** A JSON call: the decoded body, or undefined for an empty answer (204). */
	async json<T>(method: string, path: string, options: SendOptions = {}): Promise<T> {
		const res = await this.send(method, path, options);
		const text = await res.text();
		return (text ? JSON.parse(text) : undefined) as T;
	}
}
