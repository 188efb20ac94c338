// Over 300 lines on purpose: the tool call resource and its one-winner answer rules (409/410, the
// timeout, cancel on abort and exit, the session's bound) belong together, as in approvals.ts; the
// schema is the shape those rules return.
import { z } from "@hono/zod-openapi";
import { GatewayError } from "../../shared/errors.ts";
import type { ClientToolRequest } from "./client-tools.ts";

export const ToolCallStatus = z.enum(["pending", "answered", "cancelled"]).openapi("ToolCallStatus", {
	description:
		"`pending`: the model waits for the program's answer; `answered`: the program answered; `cancelled`: nobody answered (the run was aborted, pi exited, the gateway's timeout ran out, pi went on without the answer, or the session had too many calls pending) and the model got an error result saying so",
	example: "pending",
});

const TextBlock = z
	.strictObject({
		type: z.literal("text").openapi({ description: "A text block", example: "text" }),
		text: z.string().openapi({ description: "The text the model reads", example: "19.90" }),
	})
	.openapi({ description: "Text the model reads" });
const ImageBlock = z
	.strictObject({
		type: z.literal("image").openapi({ description: "An image block", example: "image" }),
		data: z
			.string()
			.regex(/^[A-Za-z0-9+/]*={0,2}$/, "base64")
			.openapi({ description: "The image's bytes, base64", example: "iVBORw0KGgo=" }),
		mimeType: z
			.string()
			.regex(/^image\/[A-Za-z0-9.+-]+$/, "an image media type")
			.openapi({ description: "Its media type", example: "image/png" }),
	})
	.openapi({ description: "An image the model sees (for models that take images)" });
export const ToolCallContent = z.discriminatedUnion("type", [TextBlock, ImageBlock]).openapi({
	description: "One block of a tool's output, as pi's tools return them",
});

const Output = z.union([z.string(), z.array(ToolCallContent).min(1).max(100)]).openapi({
	description: "The tool's output: text, or a list of content blocks (text and images)",
	example: "19.90",
});

export const ToolCallAnswer = z
	.strictObject({
		output: Output,
		isError: z
			.boolean()
			.optional()
			.openapi({ description: "The tool failed: the model gets the output as an error result", example: false }),
	})
	.openapi("ToolCallAnswer", {
		description: "The program's result for a client tool call: what the model gets back from the tool",
		example: { output: "19.90", isError: false },
	});
export type ToolCallAnswer = z.infer<typeof ToolCallAnswer>;

export const ToolCallResult = z
	.object({
		output: Output,
		isError: z.boolean().openapi({ description: "The model got it as an error result", example: false }),
	})
	.openapi("ToolCallResult", {
		description:
			"What the model got back: the program's answer, or when nobody answered, an error result that says why",
		example: { output: "19.90", isError: false },
	});

/** Who settles a call when the program did not. */
export const toolCallResolvers = {
	policy: "gateway-policy",
	abort: "gateway-abort",
	exit: "pi-exit",
	pi: "pi",
	limit: "gateway-limit",
} as const;

export const ToolCall = z
	.object({
		id: z.string().openapi({ description: "The model's tool call id (pi's toolCallId)", example: "call_7f3a" }),
		sessionId: z
			.string()
			.openapi({ description: "The session whose model called the tool", example: "ses_Crw9Yvn1qjeD" }),
		runId: z
			.string()
			.nullable()
			.openapi({ description: "The run the call belongs to (the id of the prompt that started it)", example: "gw_4" }),
		name: z.string().openapi({ description: "The client tool's name", example: "lookup_price" }),
		arguments: z.unknown().openapi({
			description: "The model's arguments, as pi checked them against the tool's `parameters`",
			example: { sku: "A-1" },
		}),
		parameters: z.record(z.string(), z.unknown()).optional().openapi({
			description:
				"The tool's `parameters` (JSON Schema) as the session declared it, so whoever answers by hand sees what the call is about (the console checks the arguments against it); absent where the declaration is not known",
		}),
		status: ToolCallStatus,
		createdAt: z.string().openapi({ format: "date-time", description: "When the model called the tool" }),
		answeredAt: z
			.string()
			.nullable()
			.openapi({ format: "date-time", description: "When it was answered or cancelled; null while pending" }),
		result: ToolCallResult.nullable().openapi({ description: "What the model got back; null while pending" }),
		resolvedBy: z
			.string()
			.nullable()
			.openapi({
				description: `Who settled it: the authenticated principal that answered, or when nobody did: \`${toolCallResolvers.policy}\` (--approval-timeout-ms ran out), \`${toolCallResolvers.abort}\` (the run was aborted), \`${toolCallResolvers.exit}\` (pi exited), \`${toolCallResolvers.pi}\` (pi finished the tool without the program's answer) or \`${toolCallResolvers.limit}\` (refused as it came: the session had --max-pending-dialogs calls pending already); null while pending`,
				example: "admin",
			}),
	})
	.openapi("ToolCall", {
		description: "A call the model made to one of the session's client tools, and its answer",
	});
export type ToolCall = z.infer<typeof ToolCall>;

export interface ToolCallEvents {
	requested(call: ToolCall): void;
	/** `response` is the line pi must get; absent when pi is gone or went on already. */
	resolved(call: ToolCall, response: Record<string, unknown> | undefined): void;
}

/** Settled calls kept per session (the oldest go first); pending ones are always kept. */
const keepSettled = 500;

/**
 * A session's client tool calls as resources (the counterpart of approvals.ts for tools the
 * program runs). Every state change is synchronous, so of two concurrent answers exactly one finds
 * the call pending. The answer reaches pi as the value of the extension's dialog.
 */
export class ToolCalls {
	readonly #sessionId: string;
	readonly #events: ToolCallEvents;
	readonly #timeoutMs: number;
	readonly #items = new Map<string, ToolCall>();
	/** The pi dialog each pending call waits in. */
	readonly #dialogs = new Map<string, string>();
	readonly #timers = new Map<string, NodeJS.Timeout>();
	/** Calls a dead node's pi made (cluster mode): nobody can answer them any more. */
	readonly #lost = new Set<string>();
	/** Calls pending at once at most (--max-pending-dialogs): past it a new one is refused as it comes. */
	readonly #maxPending: number;
	#pending = 0;
	/** The declared tools' parameters, by name (declare). */
	#parameters = new Map<string, Record<string, unknown>>();

	constructor(sessionId: string, events: ToolCallEvents, timeoutMs = 0, maxPending = Number.POSITIVE_INFINITY) {
		this.#sessionId = sessionId;
		this.#events = events;
		this.#timeoutMs = timeoutMs;
		this.#maxPending = maxPending;
	}

	/** The session's client tools as created: each call carries its tool's parameters. */
	declare(tools: readonly { name: string; parameters: Record<string, unknown> }[]): void {
		this.#parameters = new Map(tools.map((t) => [t.name, t.parameters]));
	}

	get pendingCount(): number {
		return this.#pending;
	}

	/** A pending call of this id exists (a second dialog for it is not the model's). */
	isPending(id: string): boolean {
		return this.#items.get(id)?.status === "pending";
	}

	open(dialogId: string, request: ClientToolRequest, runId: string | undefined): ToolCall {
		const call: ToolCall = {
			id: request.toolCallId,
			sessionId: this.#sessionId,
			runId: runId ?? null,
			name: request.name,
			arguments: request.arguments,
			...(this.#parameters.has(request.name) && { parameters: this.#parameters.get(request.name) }),
			status: "pending",
			createdAt: new Date().toISOString(),
			answeredAt: null,
			result: null,
			resolvedBy: null,
		};
		// A settled call of the same id (a model that reuses ids across runs) makes room for the new one.
		this.#items.delete(call.id);
		this.#items.set(call.id, call);
		this.#dialogs.set(call.id, dialogId);
		this.#pending++;
		this.#prune();
		// Past the session's bound, refused at once: the model gets an error result that says why.
		if (this.#pending > this.#maxPending) {
			const why = `Refused: this session already has ${this.#maxPending} client tool calls pending (--max-pending-dialogs)`;
			return this.#settle(call, "cancelled", failure(why), toolCallResolvers.limit);
		}
		if (this.#timeoutMs > 0) {
			const timer = setTimeout(
				() =>
					this.#settle(
						call,
						"cancelled",
						failure(`No answer from the program within ${this.#timeoutMs} ms (the gateway's approval timeout)`),
						toolCallResolvers.policy,
					),
				this.#timeoutMs,
			);
			timer.unref();
			this.#timers.set(call.id, timer);
		}
		this.#events.requested(call);
		return call;
	}

	/** Calls that were pending on a node that died: they answer 410 (the pi that asked is gone). */
	markLost(ids: Iterable<string>): void {
		for (const id of ids) this.#lost.add(id);
	}

	get(id: string): ToolCall {
		const call = this.#items.get(id);
		if (!call && this.#lost.has(id))
			throw new GatewayError(
				410,
				"tool_call_gone",
				`Tool call ${id} was pending on a gateway node that stopped; the pi process that asked is gone`,
			);
		if (!call) throw new GatewayError(404, "tool_call_not_found", `No tool call ${id} in session ${this.#sessionId}`);
		return call;
	}

	/** Oldest first. */
	list(status?: ToolCall["status"]): ToolCall[] {
		const all = [...this.#items.values()];
		return status ? all.filter((c) => c.status === status) : all;
	}

	/** The program's answer: 409 if another answer won, 410 if the call is over (its run ended). */
	answer(id: string, answer: ToolCallAnswer, principal: string | undefined): ToolCall {
		const call = this.get(id);
		if (call.status === "answered")
			throw new GatewayError(
				409,
				"tool_call_already_answered",
				`This tool call was already answered by ${call.resolvedBy}`,
			);
		if (call.status === "cancelled")
			throw new GatewayError(
				410,
				"tool_call_gone",
				`This tool call was cancelled (${call.resolvedBy}); its run no longer waits for it`,
			);
		return this.#settle(
			call,
			"answered",
			{ output: answer.output, isError: answer.isError ?? false },
			principal ?? "api",
		);
	}

	/** The run was aborted: every pending call gets an error result, so the tools return and the run ends. */
	cancelAll(by: string, why: string): void {
		for (const call of this.#items.values())
			if (call.status === "pending") this.#settle(call, "cancelled", failure(why), by);
	}

	/** pi is gone: nothing to tell it, but every pending call is over. */
	abandonAll(): void {
		for (const call of this.#items.values())
			if (call.status === "pending")
				this.#settle(
					call,
					"cancelled",
					failure("pi exited before the program answered"),
					toolCallResolvers.exit,
					false,
				);
	}

	/** pi finished the tool without the program's answer (its dialog ended some other way). */
	finishedByPi(id: string): void {
		const call = this.#items.get(id);
		if (call?.status === "pending")
			this.#settle(
				call,
				"cancelled",
				failure("pi finished the tool without the program's answer"),
				toolCallResolvers.pi,
				false,
			);
	}

	#settle(
		call: ToolCall,
		status: Exclude<ToolCall["status"], "pending">,
		result: NonNullable<ToolCall["result"]>,
		by: string,
		tellPi = true,
	): ToolCall {
		clearTimeout(this.#timers.get(call.id));
		this.#timers.delete(call.id);
		const dialogId = this.#dialogs.get(call.id);
		this.#dialogs.delete(call.id);
		call.status = status;
		call.result = result;
		call.answeredAt = new Date().toISOString();
		call.resolvedBy = by;
		this.#pending--;
		// The extension reads the value as JSON: the output and whether it is an error.
		const response =
			tellPi && dialogId !== undefined
				? { type: "extension_ui_response", id: dialogId, value: JSON.stringify(result) }
				: undefined;
		this.#events.resolved(call, response);
		return call;
	}

	#prune(): void {
		let excess = this.#items.size - this.#pending - keepSettled;
		for (const [id, call] of this.#items) {
			if (excess <= 0) return;
			if (call.status === "pending") continue;
			this.#items.delete(id);
			excess--;
		}
	}
}

const failure = (why: string): NonNullable<ToolCall["result"]> => ({ output: why, isError: true });
