import type { MiddlewareHandler } from "hono";
import type { SessionAccess } from "../../sessions/registry/index.ts";
import type { KeyStore } from "../auth/keys.ts";
import { mayAccess, sessionPath } from "../auth/ownership.ts";
import { hasScope, type Principal } from "../auth/principals.ts";
import type { AppEnv } from "../transport/openapi.ts";
import { decodedSegment } from "../transport/params.ts";

interface OpenStream {
	principal: Principal;
	/** The session whose events it carries; undefined for GET /v1/events (each event is checked as it goes). */
	sessionId: string | undefined;
	/** Ends the stream with a final `revoked` frame. */
	revoke(detail: string): void;
}

/**
 * Every SSE stream this gateway has open, with the principal that opened it. A stream is allowed
 * once, when it opens; when a share is taken away (PUT …/access) or a key is removed from the keys
 * file, the streams concerned are asked again, and those whose principal may no longer read end at
 * once with a `revoked` frame instead of carrying the next run to someone who lost the right to it.
 */
export class OpenStreams {
	readonly #streams = new Set<OpenStream>();
	readonly #access: SessionAccess;

	constructor(access: SessionAccess) {
		this.#access = access;
	}

	get size(): number {
		return this.#streams.size;
	}

	/** Registers a stream; returns its removal (when it ends, however). */
	add(stream: OpenStream): () => void {
		this.#streams.add(stream);
		return () => this.#streams.delete(stream);
	}

	/** Ends the streams (of `sessionId`, or every one) whose principal may no longer read them. */
	revalidate(sessionId?: string): number {
		let ended = 0;
		for (const stream of [...this.#streams]) {
			if (sessionId !== undefined && stream.sessionId !== undefined && stream.sessionId !== sessionId) continue;
			const why = this.#refusal(stream);
			if (why === undefined) continue;
			this.#streams.delete(stream);
			stream.revoke(why);
			ended++;
		}
		return ended;
	}

	#refusal(stream: OpenStream): string | undefined {
		const now = stream.principal.current ? stream.principal.current() : stream.principal;
		if (!now) return `The credential this stream was opened with was revoked (${stream.principal.name})`;
		if (!hasScope(now, "sessions:read")) return `${now.name} may no longer read sessions (sessions:read)`;
		if (stream.sessionId !== undefined && !mayAccess(this.#access, now, stream.sessionId, "sessions:read"))
			return `${now.name} may no longer read session ${stream.sessionId}`;
		return undefined;
	}
}

/**
 * Lets each SSE answer register with the principal that asked for it (sse.ts calls
 * `watchStream`): a session's stream under `/v1/sessions/{id}/…`, every session's at `/v1/events`.
 */
export function watchStreams(streams: OpenStreams): MiddlewareHandler<AppEnv> {
	return async function watchStreamsMiddleware(c, next) {
		const principal = c.get("principal");
		if (principal) {
			const raw = sessionPath.exec(c.req.path)?.[1];
			const sessionId = raw === undefined ? undefined : (decodedSegment(raw) ?? raw);
			c.set("watchStream", (revoke) => streams.add({ principal, sessionId, revoke }));
		}
		return next();
	};
}

/**
 * The app's open streams, checked again when a session's access changes and when the keys file is
 * read again: a share taken back or a key revoked ends the streams it covered at once.
 */
export function revokingStreams(access: SessionAccess, keys?: KeyStore): MiddlewareHandler<AppEnv> {
	const streams = new OpenStreams(access);
	access.onChange((id) => streams.revalidate(id));
	keys?.onReload(() => streams.revalidate());
	return watchStreams(streams);
}
