import { z } from "@hono/zod-openapi";

/** Shapes of pi's answers as documented in pi 1.6; loose, so newer pi fields pass through. */
export const PiModel = z
	.looseObject({
		id: z.string().describe("The model's id at its provider"),
		name: z.string().optional().describe("Its display name"),
		api: z.string().optional().describe("The API pi speaks to it (`openai-completions`, `anthropic-messages`, …)"),
		provider: z.string().describe("The provider it is configured under"),
		baseUrl: z.string().optional().describe("The endpoint pi calls"),
		reasoning: z.boolean().optional().describe("Whether it thinks (thinking levels apply)"),
		input: z.array(z.string()).optional().describe("What it reads: `text`, `image`"),
		contextWindow: z.number().optional().describe("Its context window, in tokens"),
		maxTokens: z.number().optional().describe("The most tokens one answer may have"),
		cost: z
			.record(z.string(), z.number())
			.optional()
			.describe("Price in USD per million tokens, by kind (`input`, `output`, `cacheRead`, `cacheWrite`)"),
	})
	.openapi("Model", {
		description: "A model pi can use, as pi describes it",
		example: { id: "demo", name: "Demo", provider: "pi-gateway-demo", reasoning: false, input: ["text"] },
	});

export const AgentMessage = z
	.looseObject({
		role: z.string().describe("`user`, `assistant`, `toolResult`, or a custom role an extension added"),
		content: z.unknown().optional().describe("Text, or a list of content blocks (text, thinking, tool calls, images)"),
		timestamp: z.number().optional().describe("When pi recorded it, in milliseconds since the epoch"),
	})
	.openapi("AgentMessage", { description: "A message as pi stores it (docs/message-types.md)" });

export const SessionEntry = z
	.looseObject({
		type: z.string().describe("The entry's kind (`message`, `model_change`, `compaction`, …)"),
		id: z.string().describe("The entry's id in pi's session file"),
		parentId: z.string().nullable().optional().describe("The entry it follows; null for the first"),
	})
	.openapi("SessionEntry", { description: "One entry of pi's session file (its other fields depend on `type`)" });

export const PiState = z
	.looseObject({
		model: PiModel.optional(),
		thinkingLevel: z.string().describe("The thinking level in use"),
		isStreaming: z.boolean().describe("A run is going on"),
		isCompacting: z.boolean().describe("A compaction is going on"),
		steeringMode: z.string().describe("How steering messages are delivered: `all` or `one-at-a-time`"),
		followUpMode: z.string().describe("How follow-up messages are delivered: `all` or `one-at-a-time`"),
		sessionFile: z.string().optional().describe("pi's session file (absent for an ephemeral session)"),
		sessionId: z.string().describe("pi's own session id (not the gateway's)"),
		sessionName: z.string().optional().describe("The session's display name, once set"),
		autoCompactionEnabled: z.boolean().describe("pi compacts on its own when the context fills up"),
		messageCount: z.number().describe("Messages in the conversation"),
		pendingMessageCount: z.number().describe("Steering and follow-up messages waiting in pi's queues"),
	})
	.openapi("PiState", {
		description: "pi's state (`get_state`)",
		example: {
			model: { id: "demo", provider: "pi-gateway-demo" },
			thinkingLevel: "off",
			isStreaming: false,
			isCompacting: false,
			steeringMode: "one-at-a-time",
			followUpMode: "one-at-a-time",
			sessionFile: "/var/lib/pi-gateway/agent/sessions/2026-12-01T10-00-00.jsonl",
			sessionId: "0b6f1c2e-4a7d-4e0b-9c1a-3f5e2d8b7a61",
			autoCompactionEnabled: true,
			messageCount: 2,
			pendingMessageCount: 0,
		},
	});

export const Disposition = z
	.looseObject({
		disposition: z
			.enum(["started", "queued", "handled"])
			.describe("What pi did with a prompt: started a run, queued it, or an extension command handled it"),
	})
	.openapi("Disposition", { description: "pi's answer to a prompt, steer or follow-up" });

export const Cancelled = z
	.looseObject({ cancelled: z.boolean().describe("An extension cancelled the command") })
	.openapi("CancellableResult", {
		description: "pi's answer to a command an extension may cancel",
		example: { cancelled: false },
	});

export const BashResult = z
	.looseObject({
		output: z.string().describe("What the command printed (stdout and stderr), cut to pi's limit"),
		exitCode: z.number().nullable().optional().describe("Its exit code; null when it did not exit on its own"),
		cancelled: z.boolean().describe("It was aborted (`POST …/bash/abort`)"),
		truncated: z.boolean().describe("`output` was cut"),
		fullOutputPath: z.string().optional().describe("Where pi keeps the whole output when it was cut"),
	})
	.openapi("BashResult", {
		description: "What a shell command run by pi (`bash`) gave",
		example: { output: "total 0\n", exitCode: 0, cancelled: false, truncated: false },
	});

export const Usage = z
	.looseObject({
		input: z.number().describe("Input tokens"),
		output: z.number().describe("Output tokens"),
		cacheRead: z.number().optional().describe("Input tokens read from the provider's cache"),
		cacheWrite: z.number().optional().describe("Input tokens written to the provider's cache"),
		totalTokens: z.number().optional().describe("All tokens of the call"),
	})
	.describe("Token usage of one model call (pi's `usage`)");

export const CompactResult = z
	.looseObject({
		summary: z.string().describe("The summary that replaces the compacted messages"),
		firstKeptEntryId: z.string().optional().describe("The first entry kept as it was"),
		tokensBefore: z.number().optional().describe("Context tokens before compaction"),
		estimatedTokensAfter: z.number().optional().describe("pi's estimate of the context tokens after it"),
	})
	.openapi("CompactResult", {
		description: "What a compaction did",
		example: { summary: "The user asked for a list of files; it was given.", tokensBefore: 1200 },
	});

export const SessionStats = z
	.looseObject({
		sessionFile: z.string().optional().describe("pi's session file (absent for an ephemeral session)"),
		sessionId: z.string().describe("pi's own session id"),
		userMessages: z.number().describe("User messages so far"),
		assistantMessages: z.number().describe("Assistant messages so far"),
		toolCalls: z.number().describe("Tool calls so far"),
		toolResults: z.number().describe("Tool results so far"),
		totalMessages: z.number().describe("All messages so far"),
		tokens: z.record(z.string(), z.number()).describe("Tokens used so far, by kind (`input`, `output`, `total`, …)"),
		cost: z.number().describe("What the session cost so far, in USD"),
	})
	.openapi("SessionStats", {
		description: "Counts and cost of the session so far (`get_session_stats`)",
		example: {
			sessionId: "0b6f1c2e",
			userMessages: 1,
			assistantMessages: 1,
			toolCalls: 0,
			toolResults: 0,
			totalMessages: 2,
			tokens: { input: 12, output: 8, total: 20 },
			cost: 0,
		},
	});

export const SlashCommand = z
	.looseObject({
		name: z.string().describe("What to type after `/` in a prompt"),
		description: z.string().optional().describe("What it does"),
		source: z.string().describe("Where it comes from: `extension`, `prompt` (a template) or `skill`"),
	})
	.openapi("SlashCommand", { description: "A command a prompt can start with `/name`" });

export const TreeNode = z
	.looseObject({
		entry: SessionEntry,
		children: z.array(z.unknown()).openapi({ description: "TreeNode objects, recursively" }),
	})
	.openapi("TreeNode", { description: "An entry of the session tree and the entries that follow it" });
