import { z } from "@hono/zod-openapi";

/** Shapes of pi's answers as documented in pi 1.6; loose, so newer pi fields pass through. */
export const PiModel = z
	.looseObject({
		id: z.string(),
		name: z.string().optional(),
		api: z.string().optional(),
		provider: z.string(),
		baseUrl: z.string().optional(),
		reasoning: z.boolean().optional(),
		input: z.array(z.string()).optional(),
		contextWindow: z.number().optional(),
		maxTokens: z.number().optional(),
		cost: z.record(z.string(), z.number()).optional(),
	})
	.openapi("Model");

export const AgentMessage = z
	.looseObject({ role: z.string(), content: z.unknown().optional(), timestamp: z.number().optional() })
	.openapi("AgentMessage", { description: "A message as pi stores it (docs/message-types.md)" });

export const SessionEntry = z
	.looseObject({ type: z.string(), id: z.string(), parentId: z.string().nullable().optional() })
	.openapi("SessionEntry");

export const PiState = z
	.looseObject({
		model: PiModel.optional(),
		thinkingLevel: z.string(),
		isStreaming: z.boolean(),
		isCompacting: z.boolean(),
		steeringMode: z.string(),
		followUpMode: z.string(),
		sessionFile: z.string().optional(),
		sessionId: z.string(),
		sessionName: z.string().optional(),
		autoCompactionEnabled: z.boolean(),
		messageCount: z.number(),
		pendingMessageCount: z.number(),
	})
	.openapi("PiState");

export const Disposition = z
	.looseObject({ disposition: z.enum(["started", "queued", "handled"]) })
	.openapi("Disposition");

export const Cancelled = z.looseObject({ cancelled: z.boolean() }).openapi("CancellableResult");

export const BashResult = z
	.looseObject({
		output: z.string(),
		exitCode: z.number().nullable().optional(),
		cancelled: z.boolean(),
		truncated: z.boolean(),
		fullOutputPath: z.string().optional(),
	})
	.openapi("BashResult");

export const Usage = z.looseObject({
	input: z.number(),
	output: z.number(),
	cacheRead: z.number().optional(),
	cacheWrite: z.number().optional(),
	totalTokens: z.number().optional(),
});

export const CompactResult = z
	.looseObject({
		summary: z.string(),
		firstKeptEntryId: z.string().optional(),
		tokensBefore: z.number().optional(),
		estimatedTokensAfter: z.number().optional(),
	})
	.openapi("CompactResult");

export const SessionStats = z
	.looseObject({
		sessionFile: z.string().optional(),
		sessionId: z.string(),
		userMessages: z.number(),
		assistantMessages: z.number(),
		toolCalls: z.number(),
		toolResults: z.number(),
		totalMessages: z.number(),
		tokens: z.record(z.string(), z.number()),
		cost: z.number(),
	})
	.openapi("SessionStats");

export const SlashCommand = z
	.looseObject({
		name: z.string(),
		description: z.string().optional(),
		source: z.string(),
	})
	.openapi("SlashCommand");

export const TreeNode = z
	.looseObject({
		entry: SessionEntry,
		children: z.array(z.unknown()).openapi({ description: "TreeNode objects, recursively" }),
	})
	.openapi("TreeNode");
