import type { IncomingMessage } from "node:http";
import type { RelayRoute } from "./credentials.ts";
import { Refused } from "./gate.ts";
import { type Member, small, type TopLevel, topLevel } from "./json-top.ts";

/**
 * A model call's request, read whole before a byte of it is sent (docs/limits.md "How the relay
 * counts a call"; the answer is never held): the relay must know what it is about to pay for. It
 * reads the body's top-level members once (json-top.ts), and
 * - takes the model asked for from the top-level `model` (Google's API: the path's
 *   `/models/<model>:…`), never from a `"model"` anywhere in the body (a nested decoy was priced);
 * - refuses `background: true` (OpenAI's responses run it later and bill it unseen by the relay);
 * - has a streamed OpenAI chat completion always carry `stream_options.include_usage: true`, so the
 *   provider's figures come (a reasoning model's hidden tokens are in no byte of the stream).
 * A body larger than `requestLimits.bodyBytes` is 413, a compressed one 415, one that is not a JSON
 * object 400; each before anything is sent.
 */
export const requestLimits = {
	/** A model call's body at most (Anthropic's own request limit is 32 MB). */
	bodyBytes: 32 * 1024 * 1024,
};

export interface ModelRequest {
	/** What is sent on: the caller's bytes, or with `stream_options.include_usage` set. */
	bytes: Buffer;
	/** The model the call asks for, when it names one. */
	model: string | undefined;
}

const tooLarge = () =>
	new Refused(
		413,
		"relay_body_too_large",
		`A model call's body is at most ${requestLimits.bodyBytes} bytes through the gateway's relay`,
	);

/** The body, whole: 413 as soon as it (or its content-length) passes `cap`. */
function readAll(req: IncomingMessage, cap: number): Promise<Buffer> {
	if (Number(req.headers["content-length"]) > cap) return Promise.reject(tooLarge());
	return new Promise((resolve, reject) => {
		const parts: Buffer[] = [];
		let size = 0;
		const done = (error?: Refused) => {
			req.off("data", onData).off("end", onEnd).off("close", onClose).off("error", onClose);
			if (error) reject(error);
			else resolve(Buffer.concat(parts, size));
		};
		const onData = (chunk: Buffer) => {
			size += chunk.length;
			if (size > cap) done(tooLarge());
			else parts.push(chunk);
		};
		const onEnd = () => done();
		const onClose = () => done(new Refused(400, "relay_body_incomplete", "The call's body did not come whole"));
		req.on("data", onData).on("end", onEnd).on("close", onClose).on("error", onClose);
	});
}

/** `path` decoded (gate.ts checks the decoded path too); "" when it does not decode. */
function decoded(path: string): string {
	try {
		return decodeURIComponent(path);
	} catch {
		return "";
	}
}

/** A member whose value is `false` or `null` (an option left off); anything else counts as set. */
function off(bytes: Buffer, member: Member): boolean {
	const text = member.end - member.start <= 5 ? bytes.toString("latin1", member.start, member.end) : "";
	return text === "false" || text === "null";
}

/** `stream_options` with `include_usage: true`, from what the caller sent (kept when it is a small object). */
function withUsage(value: unknown): string {
	const options = value && typeof value === "object" && !Array.isArray(value) ? value : {};
	return JSON.stringify({ ...options, include_usage: true });
}

/**
 * The body of a streamed OpenAI chat completion with `stream_options.include_usage: true` (LiteLLM
 * does the same), or undefined when it needs no change: not such a call, or already asked for.
 * A `stream` of any value but false or null counts as streamed (a lax parser may take "true").
 */
function includeUsage(route: RelayRoute, path: string, bytes: Buffer, top: TopLevel): Buffer | undefined {
	if (!/\/chat\/completions$/.test(path)) return undefined;
	if (route.apis.size > 0 && !route.apis.has("openai-completions")) return undefined;
	if (!top.members.some((m) => m.name === "stream" && !off(bytes, m))) return undefined;
	const options = top.members.filter((m) => m.name === "stream_options");
	if (options.length === 0) {
		const member = `"stream_options":${withUsage({})}${top.members.length > 0 ? "," : ""}`;
		return Buffer.concat([bytes.subarray(0, top.open + 1), Buffer.from(member), bytes.subarray(top.open + 1)]);
	}
	const values = options.map((m) => small(bytes, m, 64 * 1024));
	if (values.every((v) => (v as { include_usage?: unknown } | undefined)?.include_usage === true)) return undefined;
	const parts: Buffer[] = [];
	let from = 0;
	options.forEach((member, i) => {
		parts.push(bytes.subarray(from, member.start), Buffer.from(withUsage(values[i])));
		from = member.end;
	});
	parts.push(bytes.subarray(from));
	return Buffer.concat(parts);
}

/** Reads a model call's body whole, and what the relay needs of it; throws Refused. */
export async function readModelRequest(req: IncomingMessage, route: RelayRoute, path: string): Promise<ModelRequest> {
	const encoding = req.headers["content-encoding"];
	if (encoding !== undefined && encoding.toLowerCase() !== "identity")
		throw new Refused(415, "relay_body_encoded", "The relay reads a model call's body: send it uncompressed");
	const bytes = await readAll(req, requestLimits.bodyBytes);
	const plain = decoded(path);
	// Google's API names the model in the path (`…/models/<model>:generateContent`).
	const inPath = /\/models\/([^/:]+):[A-Za-z]+$/.exec(plain)?.[1];
	if (bytes.length === 0) return { bytes, model: inPath };
	const top = await topLevel(bytes);
	if (!top) throw new Refused(400, "relay_body_invalid", "A model call's body is one JSON object");
	if (top.members.some((m) => m.name === "background" && !off(bytes, m)))
		throw new Refused(
			403,
			"relay_background_refused",
			"The relay refuses background calls: they would run and bill after the call, uncounted",
		);
	// Written twice with two names (parsers differ on which they keep): none is taken, the dearest is charged.
	const named = new Set(top.members.filter((m) => m.name === "model").map((m) => small(bytes, m)));
	const [value] = named;
	const model = inPath ?? (named.size === 1 && typeof value === "string" ? value : undefined);
	return { bytes: includeUsage(route, plain, bytes, top) ?? bytes, model };
}
