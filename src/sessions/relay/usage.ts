/**
 * The usage of one model call, read from the provider's answer as it passes through the relay
 * (never buffered on the way: the tap sees a copy of each chunk). OpenAI chat completions and
 * responses, Anthropic messages, Gemini's generateContent and the APIs shaped like them, streamed
 * (SSE) or not (JSON, a JSON array for Gemini's stream without `alt=sse`): wherever an answer or an
 * event carries `usage` (or `response.usage`, `message.usage`) or Gemini's `usageMetadata`, the
 * largest figure of each field seen wins, which reads Anthropic's running `message_delta` counts,
 * OpenAI's final chunk and Gemini's running totals alike.
 */
export interface CallUsage {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	/** The model the provider says answered, when it says. */
	model?: string;
}

/** A JSON answer larger than this is passed on but not read (a usage figure lies in the first MiBs). */
const maxJsonBytes = 8 * 1024 * 1024;
/** An SSE line longer than this is skipped (its chunk is still passed on whole). */
const maxLineBytes = 1024 * 1024;

/** Both `"usage"` and Gemini's `"usageMetadata"` start so. */
const usageKey = Buffer.from('"usage');
const empty = Buffer.alloc(0);

const n = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0);

/**
 * Gemini's `usageMetadata`, as pi-ai reads it (input without the cached part; the thinking tokens
 * are output, billed as such), with the tool-use prompt as input and whatever `totalTokenCount`
 * holds beyond the parts as output: the call counts at least the total Google gives.
 */
function geminiUsage(usage: Record<string, unknown>): Omit<CallUsage, "model"> {
	const cached = n(usage.cachedContentTokenCount);
	const input = Math.max(0, n(usage.promptTokenCount) - cached) + n(usage.toolUsePromptTokenCount);
	const output = n(usage.candidatesTokenCount) + n(usage.thoughtsTokenCount);
	const beyond = Math.max(0, n(usage.totalTokenCount) - input - output - cached);
	return { input, output: output + beyond, cacheRead: cached, cacheWrite: 0 };
}

/** The usage fields of one provider object, normalised: input without the cached part, as pi counts. */
export function normaliseUsage(usage: Record<string, unknown>): Omit<CallUsage, "model"> {
	if (["promptTokenCount", "candidatesTokenCount", "totalTokenCount"].some((key) => key in usage))
		return geminiUsage(usage);
	const details = (usage.prompt_tokens_details ?? usage.input_tokens_details) as Record<string, unknown> | undefined;
	const cached = n(details?.cached_tokens);
	if ("prompt_tokens" in usage || "completion_tokens" in usage)
		return {
			input: Math.max(0, n(usage.prompt_tokens) - cached),
			output: n(usage.completion_tokens),
			cacheRead: cached,
			cacheWrite: 0,
		};
	const anthropic = "cache_read_input_tokens" in usage || "cache_creation_input_tokens" in usage;
	return {
		// OpenAI's responses count the cached part inside input_tokens; Anthropic's apart.
		input: anthropic ? n(usage.input_tokens) : Math.max(0, n(usage.input_tokens) - cached),
		output: n(usage.output_tokens),
		cacheRead: anthropic ? n(usage.cache_read_input_tokens) : cached,
		cacheWrite: n(usage.cache_creation_input_tokens),
	};
}

export class UsageTap {
	readonly usage: CallUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
	/** Whether the answer carried a usage figure at all (a figure of 0 included). */
	figured = false;
	#sse: boolean;
	/** The start of a line not ended yet. */
	#carry = empty;
	/** An over-long line is being dropped up to its end. */
	#skipping = false;
	#json: Buffer[] = [];
	#jsonBytes = 0;

	constructor(contentType: string | undefined) {
		this.#sse = /text\/event-stream/i.test(contentType ?? "");
	}

	push(chunk: Buffer): void {
		if (!this.#sse) {
			if (this.#jsonBytes + chunk.length <= maxJsonBytes) this.#json.push(chunk);
			this.#jsonBytes += chunk.length;
			return;
		}
		// Lines are cut at the byte 0x0A, which no UTF-8 character holds, and only the lines of a read
		// that names "usage" are decoded: the text deltas between cost two scans in native code.
		const bytes = this.#carry.length > 0 ? Buffer.concat([this.#carry, chunk]) : chunk;
		const lastNewline = bytes.lastIndexOf(10);
		if (lastNewline === -1) {
			this.#keep(bytes);
			return;
		}
		const figure = bytes.indexOf(usageKey);
		if (figure !== -1 && figure < lastNewline) {
			const lines = bytes.toString("utf8", 0, lastNewline).split("\n");
			// The first line's start was dropped with an over-long line: it is not read.
			for (let i = this.#skipping ? 1 : 0; i < lines.length; i++) this.#take(lines[i] as string);
		}
		this.#skipping = false;
		this.#keep(bytes.subarray(lastNewline + 1));
	}

	/** Keeps a line's start (`part`: the carry and what followed) for the next chunk, a copy, up to maxLineBytes. */
	#keep(part: Buffer): void {
		if (this.#skipping) return;
		if (part.length > maxLineBytes) {
			this.#carry = empty;
			this.#skipping = true;
			return;
		}
		this.#carry = part.length === 0 ? empty : Buffer.from(part);
	}

	/** The usage once the answer ended. */
	end(): CallUsage {
		if (this.#sse) {
			if (!this.#skipping) this.#take(this.#carry.toString("utf8"));
		} else if (this.#jsonBytes <= maxJsonBytes) {
			try {
				this.#read(JSON.parse(Buffer.concat(this.#json).toString("utf8")));
			} catch {}
		}
		return this.usage;
	}

	#take(line: string): void {
		const text = line.endsWith("\r") ? line.slice(0, -1) : line;
		if (!text.startsWith("data:")) return;
		const data = text.slice(5).trim();
		// Only an event that carries a figure is parsed: the text deltas between pass untouched.
		if (!data.startsWith("{") || !data.includes('"usage')) return;
		try {
			this.#read(JSON.parse(data));
		} catch {}
	}

	#read(value: unknown): void {
		if (!value || typeof value !== "object") return;
		// Gemini's streamGenerateContent without alt=sse: one JSON array of the stream's chunks.
		if (Array.isArray(value)) {
			for (const item of value) if (item && typeof item === "object" && !Array.isArray(item)) this.#read(item);
			return;
		}
		const object = value as Record<string, unknown>;
		const nested = [object, object.response, object.message].filter(
			(o): o is Record<string, unknown> => !!o && typeof o === "object",
		);
		for (const holder of nested) {
			const model = holder.model ?? holder.modelVersion;
			if (typeof model === "string" && !this.usage.model) this.usage.model = model;
			const usage = holder.usage ?? holder.usageMetadata;
			if (!usage || typeof usage !== "object") continue;
			this.figured = true;
			const figures = normaliseUsage(usage as Record<string, unknown>);
			for (const key of ["input", "output", "cacheRead", "cacheWrite"] as const)
				this.usage[key] = Math.max(this.usage[key], figures[key]);
		}
	}
}

export const totalTokens = (u: CallUsage) => u.input + u.output + u.cacheRead + u.cacheWrite;

/** What one call did, besides its answer's figures: the bytes each way, and whether the answer came whole. */
export interface CallBytes {
	request: number;
	answer: number;
	/** The answer ended as the provider meant (not cut by either side). */
	ended: boolean;
}

/**
 * The usage to count for a call that got an answer (2xx): the provider's figures when the answer came
 * whole with them, else an estimate, never 0 (issue 42; docs/limits.md "How the relay counts a call"). A stream
 * without a figure (OpenAI chat completions without `stream_options.include_usage`), an answer cut
 * before its figure, or a JSON answer past the tap's cap would otherwise count nothing. The estimate
 * is about 4 bytes a token: the input side is the figure read (Anthropic's message_start gives it
 * before the text) or the request's bytes / 4; the output is the larger of the figure and the
 * answer's bytes / 4. Bytes overcount (JSON escapes, a stream's framing): a budget errs towards
 * refusing, not towards letting a call pass uncounted.
 */
export function meteredUsage(figures: CallUsage, figured: boolean, bytes: CallBytes): CallUsage {
	if (figured && bytes.ended) return figures;
	const usage = { ...figures };
	if (usage.input + usage.cacheRead + usage.cacheWrite === 0) usage.input = Math.ceil(bytes.request / 4);
	usage.output = Math.max(usage.output, Math.ceil(bytes.answer / 4));
	return usage;
}
