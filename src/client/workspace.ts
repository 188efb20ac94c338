/** A session's folder over HTTP (`…/files`, `…/changes`, `…/archive`); paths are relative to its cwd. */
import type { Transport } from "./http.ts";
import type { Schemas } from "./types.ts";

export class Workspace {
	readonly #transport: Transport;

	constructor(transport: Transport) {
		this.#transport = transport;
	}

	/** A folder's entries (the session's cwd when `path` is left out). */
	list(id: string, path?: string, signal?: AbortSignal): Promise<Schemas["WorkspaceListing"]> {
		return this.#transport.json("GET", "/v1/sessions/{id}/files", { path: { id }, query: { path }, signal });
	}

	/** A file's bytes. */
	async read(id: string, path: string, signal?: AbortSignal): Promise<Uint8Array> {
		const res = await this.#transport.send("GET", "/v1/sessions/{id}/files/content", {
			path: { id },
			query: { path },
			headers: { accept: "*/*" },
			signal,
		});
		return new Uint8Array(await res.arrayBuffer());
	}

	/** A file's text (UTF-8). */
	async readText(id: string, path: string, signal?: AbortSignal): Promise<string> {
		return new TextDecoder().decode(await this.read(id, path, signal));
	}

	/** Creates or replaces a file (folders too); `created` is true for a new file (201), false when replaced (204). */
	async write(
		id: string,
		path: string,
		content: string | Uint8Array,
		options: { ifMatch?: string; signal?: AbortSignal } = {},
	): Promise<{ created: boolean; etag: string | null }> {
		const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
		const res = await this.#transport.send("PUT", "/v1/sessions/{id}/files/content", {
			path: { id },
			query: { path },
			body: bytes,
			headers: options.ifMatch ? { "if-match": options.ifMatch } : {},
			signal: options.signal,
		});
		await res.body?.cancel();
		return { created: res.status === 201, etag: res.headers.get("etag") };
	}

	async delete(id: string, path: string, signal?: AbortSignal): Promise<void> {
		await this.#transport.json("DELETE", "/v1/sessions/{id}/files/content", { path: { id }, query: { path }, signal });
	}

	search(id: string, q: string, options: { glob?: string; signal?: AbortSignal } = {}) {
		return this.#transport.json<Schemas["WorkspaceSearchResult"]>("GET", "/v1/sessions/{id}/files/search", {
			path: { id },
			query: { q, glob: options.glob },
			signal: options.signal,
		});
	}

	/** What changed since the session started, or in one run. */
	changes(id: string, runId?: string, signal?: AbortSignal): Promise<Schemas["WorkspaceChanges"]> {
		return this.#transport.json("GET", "/v1/sessions/{id}/changes", { path: { id }, query: { runId }, signal });
	}

	/** The folder as a gzip'd tar: the raw response, to stream wherever it goes. */
	archive(id: string, signal?: AbortSignal): Promise<Response> {
		return this.#transport.send("GET", "/v1/sessions/{id}/archive", {
			path: { id },
			headers: { accept: "application/gzip" },
			signal,
		});
	}
}
