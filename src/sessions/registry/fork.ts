import { z } from "@hono/zod-openapi";
import type { Config } from "../../config/config.ts";
import { SessionName } from "../../pi/protocol.ts";
import { GatewayError } from "../../shared/errors.ts";
import { readForkedConversation, writeForkedConversation } from "../process/fork-file.ts";
import type { CreateSessionBody } from "../process/spawn.ts";
import { SessionBudget } from "../session/budget.ts";
import type { Session } from "../session/session.ts";

/**
 * Forking into a new session (POST /v1/sessions/{id}/fork-session): a new gateway session, the
 * caller's, whose pi starts on the original's conversation up to an entry and works in a copy of
 * the original's folder. The original is only read: its pi, its file and its folder stay as they
 * were. pi's own `fork` and `clone` (POST …/fork, …/clone) branch inside the same session instead.
 */

export const ForkSessionBody = z
	.strictObject({
		entryId: z
			.string()
			.regex(/^[\w-]{1,64}$/, "a pi entry id")
			.optional()
			.openapi({
				description:
					"The entry the fork's conversation ends at, inclusive: one of `GET …/entries` (or `…/tree`), or a user message of `GET …/fork-messages`. Absent: the whole conversation, every branch, continuing where the original would. 404 `entry_not_found` when the conversation has no such entry",
				example: "a1b2c3d4",
			}),
		name: SessionName.optional().openapi({
			description: "The new session's display name (default: the original's)",
			example: "refactor-auth, second try",
		}),
		budget: SessionBudget.optional().openapi({
			description: "The new session's budget (default: the original's limits; its usage starts at zero)",
		}),
	})
	.openapi("ForkSession", {
		description: "Which part of the conversation the new session starts with; every field is optional",
		example: { entryId: "a1b2c3d4", name: "refactor-auth, second try" },
	});
export type ForkSessionBody = z.infer<typeof ForkSessionBody>;

/**
 * The new session's options: the original's (model, tools, extensions, prompts, client tools,
 * policies, sandbox extras), with a folder of its own instead of the original's `cwd` and no
 * `resume`. A session that keeps no pi session file (persist:false) has no conversation to fork.
 */
export function forkOptions(original: Session, options: CreateSessionBody | undefined, request: ForkSessionBody) {
	if (options?.persist === false)
		throw new GatewayError(
			409,
			"conversation_not_kept",
			`Session ${original.id} keeps no pi session file (persist:false): its conversation cannot be forked`,
		);
	const { cwd: _cwd, resume: _resume, name: _name, budget: _budget, ...kept } = options ?? { persist: true };
	const limits = request.budget ?? original.budget.limits;
	const budget = Object.keys(limits).length > 0 ? limits : undefined;
	// The original's name as it is now (PUT …/name, pi's own), where it is one a create would take.
	const name = request.name ?? (SessionName.safeParse(original.name).success ? original.name : undefined);
	return { ...kept, persist: true, name, budget } satisfies CreateSessionBody;
}

/** What a new session starts from besides its options: its folder's content and its conversation (registry.ts). */
export type Seed = (id: string, cwd: string) => Promise<{ restore?: string }>;

/**
 * The fork's seed: the conversation is read and cut first (an unknown entry is refused before any
 * folder is made), then `copyFolder` fills the new folder, then the cut conversation is written
 * with that folder as its `cwd`. Without a conversation yet, pi starts an empty one.
 */
export function forkSeed(
	config: Config,
	original: Session,
	entryId: string | undefined,
	copyFolder: (from: string, to: string) => Promise<void>,
): Seed {
	return async (_id, cwd) => {
		const conversation = await readForkedConversation(config, original.piState.sessionFile, entryId);
		await copyFolder(original.cwd, cwd);
		if (!conversation) return {};
		return { restore: await writeForkedConversation(config, conversation, cwd) };
	};
}
