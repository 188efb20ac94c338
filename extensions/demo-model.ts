/**
 * pi-gateway's offline demo model: a pi provider with its own `streamSimple`, so real pi runs
 * real turns, tools and events with no API key and no network.
 *
 * The reply is chosen from the last user message (the trigger is case-insensitive):
 *   bash: CMD     calls pi's bash tool with CMD, then reports the tool's output
 *   tool: NAME {JSON}  calls the tool NAME (a client tool, say) with the JSON object as its
 *                 arguments, then answers with the tool's output text ("Error: …" if it failed)
 *   echo: TEXT    replies TEXT exactly, a few characters per delta
 *   count: N      replies "1 2 … N", one delta per number (long streams, abortable)
 *   slow: N       N deltas 100 ms apart (time to steer, abort or disconnect mid-run)
 *   fail: TEXT    the provider fails with TEXT as the error message
 *   anything else a short greeting that quotes the prompt, one delta per word
 *   repair: JSON  with the gateway's outputSchema: first an answer with no JSON in it, then JSON
 *                 once the gateway's repair turn asks again (structured output's repair, offline)
 * The gateway's structured-output instruction after a prompt is not part of what is echoed, and a
 * repair turn is answered as the prompt it repairs (see structuredOutput below).
 * PI_GATEWAY_DEMO_DELAY_MS sets a pause between ordinary deltas (default 0).
 */
import {
	type AssistantMessage,
	type AssistantMessageEventStream,
	createAssistantMessageEventStream,
	type JsonObject,
	type Model,
	type SimpleStreamOptions,
} from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type Block = { type: string; text?: string };
type AnyMessage = { role: string; content: string | Block[]; toolName?: string; isError?: boolean };

const SLOW_DELTA_MS = 100;
/**
 * Deltas pushed between two turns of the event loop. With no delay the loop below never waits on
 * a timer, and `await` of a settled promise is only a microtask: without a macrotask turn now and
 * then pi would not read its stdin (an abort) until all of `count: 100000` was produced.
 */
const DELTAS_PER_TURN = 64;

function textOf(message: AnyMessage | undefined): string {
	if (!message) return "";
	if (typeof message.content === "string") return message.content;
	return message.content.map((block) => (block.type === "text" ? (block.text ?? "") : "")).join("");
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	if (ms <= 0) return Promise.resolve();
	return new Promise((resolve) => {
		const timer = setTimeout(resolve, ms);
		signal?.addEventListener("abort", () => {
			clearTimeout(timer);
			resolve();
		});
	});
}

/** Splits into chunks of `size` code points, so no delta ends inside a surrogate pair. */
function chunks(text: string, size: number): string[] {
	const points = Array.from(text);
	const out: string[] = [];
	for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
	return out;
}

type Plan =
	| { deltas: string[]; delayMs: number }
	| { toolCall: { name: string; arguments: JsonObject } }
	| { error: string };

function plan(messages: AnyMessage[]): Plan {
	const delay = Number(process.env.PI_GATEWAY_DEMO_DELAY_MS ?? 0) || 0;
	const last = messages.filter((m) => m.role !== "system").at(-1);
	if (last?.role === "toolResult" && last.toolName !== "bash") {
		const output = textOf(last);
		return { deltas: chunks(last.isError ? `Error: ${output}` : output, 8), delayMs: delay };
	}
	if (last?.role === "toolResult") {
		const output = textOf(last).trim();
		return { deltas: chunks(`The command finished. Output:\n${output}`, 8), delayMs: delay };
	}
	const prompt = textOf(last);
	const match = /^\s*(bash|tool|echo|count|slow|fail):\s?([\s\S]*)$/i.exec(prompt);
	const verb = match?.[1]?.toLowerCase();
	const arg = match?.[2] ?? "";
	if (verb === "bash") return { toolCall: { name: "bash", arguments: { command: arg.trim() } } };
	if (verb === "tool") return toolPlan(arg);
	if (verb === "echo") return { deltas: chunks(arg, 4), delayMs: delay };
	if (verb === "fail") return { error: arg || "demo failure" };
	if (verb === "count" || verb === "slow") {
		const n = Math.max(1, Math.min(100_000, Number.parseInt(arg, 10) || 10));
		const deltas = Array.from({ length: n }, (_, i) => (i === 0 ? "1" : ` ${i + 1}`));
		return { deltas, delayMs: verb === "slow" ? SLOW_DELTA_MS : delay };
	}
	const words = `Hello from the pi-gateway demo model. You said: ${prompt}`.split(/(?<= )/);
	return { deltas: words, delayMs: delay };
}

/** `tool: NAME {json}`: the call, or an error a newcomer can act on. */
function toolPlan(arg: string): Plan {
	const call = /^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*([\s\S]*)$/.exec(arg);
	if (!call?.[1]) return { error: "tool: needs a tool name, then optional JSON arguments" };
	const json = call[2]?.trim() || "{}";
	let args: unknown;
	try {
		args = JSON.parse(json);
	} catch {
		return { error: `tool: the arguments are not JSON: ${json}` };
	}
	if (args === null || typeof args !== "object" || Array.isArray(args))
		return { error: "tool: the arguments must be a JSON object" };
	return { toolCall: { name: call[1], arguments: args as JsonObject } };
}

function streamDemo(model: Model<string>, context: { messages: unknown[] }, options?: SimpleStreamOptions) {
	const stream: AssistantMessageEventStream = createAssistantMessageEventStream();
	const signal = options?.signal;
	const output: AssistantMessage = {
		role: "assistant",
		content: [],
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage: {
			input: 0,
			output: 0,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 0,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "pending",
		timestamp: Date.now(),
	};

	const run = async () => {
		const step = plan(context.messages as AnyMessage[]);
		if ("error" in step) throw new Error(step.error);
		stream.push({ type: "start", partial: output });
		if ("toolCall" in step) {
			const toolCall = {
				type: "toolCall" as const,
				id: `demo_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`,
				...step.toolCall,
			};
			output.content.push(toolCall);
			stream.push({ type: "toolcall_start", contentIndex: 0, partial: output });
			stream.push({
				type: "toolcall_delta",
				contentIndex: 0,
				delta: JSON.stringify(toolCall.arguments),
				partial: output,
			});
			stream.push({ type: "toolcall_end", contentIndex: 0, toolCall, partial: output });
			output.stopReason = "toolUse";
		} else {
			const block = { type: "text" as const, text: "" };
			output.content.push(block);
			stream.push({ type: "text_start", contentIndex: 0, partial: output });
			for (const [i, delta] of step.deltas.entries()) {
				if (step.delayMs > 0) await sleep(step.delayMs, signal);
				else if (i % DELTAS_PER_TURN === DELTAS_PER_TURN - 1) await new Promise(setImmediate);
				if (signal?.aborted) throw new Error("Request was aborted");
				block.text += delta;
				output.usage.output += 1;
				stream.push({ type: "text_delta", contentIndex: 0, delta, partial: output });
			}
			stream.push({ type: "text_end", contentIndex: 0, content: block.text, partial: output });
			output.stopReason = "stop";
		}
		output.usage.input = context.messages.length;
		output.usage.totalTokens = output.usage.input + output.usage.output;
		// Priced like a real model (per million tokens), so usage and cost metrics show real numbers.
		const cost = output.usage.cost;
		cost.input = (output.usage.input * model.cost.input) / 1e6;
		cost.output = (output.usage.output * model.cost.output) / 1e6;
		cost.total = cost.input + cost.output;
		stream.push({ type: "done", reason: output.stopReason, message: output });
		stream.end();
	};

	run().catch((error: unknown) => {
		output.stopReason = signal?.aborted ? "aborted" : "error";
		output.errorMessage = error instanceof Error ? error.message : String(error);
		stream.push({ type: "error", reason: output.stopReason, error: output });
		stream.end();
	});
	return stream;
}

/** Where pi-gateway's structured-output text begins (src/sessions/runs/run-output.ts, instructionMarker). */
const outputMarker = "[pi-gateway structured output]";

/**
 * The conversation as the demo model reads it under pi-gateway's structured output: the
 * instruction after a prompt is dropped (so `echo: {json}` echoes the JSON), and a repair turn's
 * prompt is replaced by the prompt it repairs, answered again: `echo:` the same, `repair: JSON`
 * its JSON (its first answer, with no repair yet, has no JSON in it).
 */
function structuredOutput(messages: AnyMessage[]): AnyMessage[] {
	const at = messages.findLastIndex((m) => m.role !== "system");
	const last = messages[at];
	if (last?.role !== "user") return messages;
	const strip = (message: AnyMessage) => {
		const text = textOf(message);
		const cut = text.indexOf(`\n\n${outputMarker}`);
		return cut === -1 ? text : text.slice(0, cut);
	};
	let prompt = strip(last);
	const repairing = prompt.startsWith(outputMarker);
	if (repairing) {
		const original = messages.findLast((m) => m.role === "user" && !textOf(m).startsWith(outputMarker));
		prompt = original ? strip(original) : "";
	}
	const repair = /^\s*repair:\s?([\s\S]*)$/i.exec(prompt);
	if (repair)
		prompt = repairing
			? `echo: ${repair[1]}`
			: "echo: Here is the answer, in words rather than in the format you asked for.";
	if (prompt === textOf(last)) return messages;
	return messages.map((m, i) => (i === at ? { ...last, content: [{ type: "text", text: prompt }] } : m));
}

export default function demoModel(pi: ExtensionAPI) {
	pi.registerProvider("pi-gateway-demo", {
		name: "pi-gateway demo (offline)",
		baseUrl: "http://127.0.0.1:9/unused",
		apiKey: "offline-demo",
		api: "pi-gateway-demo",
		models: [
			{
				id: "demo",
				name: "Offline demo model",
				reasoning: false,
				input: ["text", "image"],
				// Demo prices (USD per million tokens; nothing is charged): input is the number of
				// messages in the context, output one token per delta.
				cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
				contextWindow: 128000,
				maxTokens: 8192,
			},
		],
		streamSimple: ((model: Model<string>, context: { messages: unknown[] }, options?: SimpleStreamOptions) =>
			streamDemo(
				model,
				{ ...context, messages: structuredOutput(context.messages as AnyMessage[]) },
				options,
			)) as never,
	});
}
