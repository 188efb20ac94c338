import { Readable } from "node:stream";
import type { Context, MiddlewareHandler } from "hono";
import { GatewayError } from "../../../shared/errors.ts";
import { confinementOf } from "../../../workspace/confined.ts";
import { listFolder } from "../../../workspace/listing.ts";
import { contentTypeOf, etagOf, openFile, parseRange } from "../../../workspace/reading.ts";
import { searchWorkspace } from "../../../workspace/search.ts";
import { deleteFile as removeFile, writeFile as storeFile } from "../../../workspace/writing.ts";
import { type AppEnv, createRouter } from "../../transport/openapi.ts";
import { toProblem } from "../../transport/problem.ts";
import type { Deps } from "../deps.ts";
import { deleteFile, listFiles, readFile, searchFiles, writeFile } from "./files.routes.ts";

/** The upload operation's path: its body is raw and bounded here, not by the JSON body limit (app.ts). */
export const isUpload = (path: string) => /^\/v1\/sessions\/[^/]+\/files\/content$/.test(path);

/**
 * A refused upload (413, 403, 412, …) leaves its body unread, and a connection with half a body
 * in it cannot carry the next request: the answer says `Connection: close`, so the client opens a
 * new one instead of reusing this (seen: the next request on it failed with "other side closed").
 */
export function closeAfterRefusedUpload(): MiddlewareHandler {
	return async function closeAfterRefusedUploadMiddleware(c, next) {
		await next();
		if (c.req.method === "PUT" && isUpload(c.req.path) && c.res.status >= 400) c.res.headers.set("Connection", "close");
	};
}

/** What keeps an agent's HTML or SVG from running script in the gateway's origin (which holds the token). */
const inert = { "Content-Security-Policy": "sandbox; default-src 'none'", "X-Content-Type-Options": "nosniff" };

/** GET …/files/content: 200, 206 for one range, 304 for a current If-None-Match, 416 past the end. */
async function sendFile(c: Context<AppEnv>, cwd: string, path: string): Promise<Response> {
	const { handle, stat } = await openFile(cwd, path);
	const etag = etagOf(stat);
	const headers: Record<string, string> = {
		...inert,
		ETag: etag,
		"Accept-Ranges": "bytes",
		"Content-Type": contentTypeOf(path),
	};
	const range = parseRange(c.req.header("range"), stat.size);
	if (
		c.req
			.header("if-none-match")
			?.split(",")
			.map((t) => t.trim())
			.includes(etag)
	) {
		await handle.close();
		return new Response(null, { status: 304, headers: { ETag: etag } });
	}
	if (range === "unsatisfiable") {
		await handle.close();
		const refusal = new GatewayError(
			416,
			"range_not_satisfiable",
			`The range lies outside the file's ${stat.size} bytes`,
		);
		return c.json(toProblem(refusal, c.get("requestId")), 416, {
			"Content-Type": "application/problem+json",
			"Content-Range": `bytes */${stat.size}`,
		});
	}
	if (stat.size === 0) {
		await handle.close();
		return new Response(null, { status: 200, headers: { ...headers, "Content-Length": "0" } });
	}
	const { start, end } = range ?? { start: 0, end: stat.size - 1 };
	const body = Readable.toWeb(handle.createReadStream({ start, end })) as ReadableStream;
	headers["Content-Length"] = String(end - start + 1);
	if (!range) return new Response(body, { status: 200, headers });
	return new Response(body, {
		status: 206,
		headers: { ...headers, "Content-Range": `bytes ${start}-${end}/${stat.size}` },
	});
}

/** PUT …/files/content: the raw body to disk, bounded before a byte is read when Content-Length says so. */
async function receiveFile(c: Context, deps: Deps, cwd: string, path: string): Promise<Response> {
	const max = deps.config.workspaceMaxUploadBytes;
	if (Number(c.req.header("content-length") ?? 0) > max)
		throw new GatewayError(413, "body_too_large", `Uploads are limited to ${max} bytes (--workspace-max-upload-bytes)`);
	const raw = c.req.raw.body;
	const body = raw ? Readable.fromWeb(raw as never) : Readable.from([]);
	const written = await storeFile(cwd, path, body, {
		maxBytes: max,
		ifMatch: c.req.header("if-match"),
		ifNoneMatch: c.req.header("if-none-match"),
	});
	if (!written.created) return new Response(null, { status: 204, headers: { ETag: written.etag } });
	const location = `${new URL(c.req.url).pathname}?path=${encodeURIComponent(path)}`;
	return new Response(null, { status: 201, headers: { ETag: written.etag, Location: location } });
}

export function workspaceFilesRouter(deps: Deps) {
	const cwdOf = (c: Context) => deps.registry.get(c.req.param("id") as string).cwd;
	return createRouter()
		.openapi(listFiles, async (c) => {
			const { path, limit, cursor } = c.req.valid("query");
			return c.json(await listFolder(cwdOf(c), path, { limit, offset: Number(cursor ?? 0) }), 200);
		})
		.openapi(readFile, (c) => sendFile(c, cwdOf(c), c.req.valid("query").path) as never)
		.openapi(writeFile, (c) => receiveFile(c, deps, cwdOf(c), c.req.valid("query").path) as never)
		.openapi(deleteFile, async (c) => {
			await removeFile(cwdOf(c), c.req.valid("query").path);
			return c.body(null, 204);
		})
		.openapi(searchFiles, async (c) => {
			const { q, glob } = c.req.valid("query");
			const { config } = deps;
			const result = await searchWorkspace(cwdOf(c), {
				q,
				glob,
				maxResults: config.workspaceMaxSearchResults,
				timeoutMs: config.workspaceSearchTimeoutMs,
				ripgrep: config.workspaceRipgrep,
				confine: confinementOf(config),
			});
			return c.json(result, 200);
		});
}
