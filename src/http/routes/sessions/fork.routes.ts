import { createRoute, z } from "@hono/zod-openapi";
import { ForkSessionBody } from "../../../sessions/registry/index.ts";
import { json, jsonBody, problem, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import { SessionView, sessionExample } from "./session-view.ts";

const FolderCopy = z
	.object({
		files: z.number().int().describe("Files copied"),
		folders: z.number().int().describe("Folders copied"),
		links: z.number().int().describe("Symlinks copied (as links; only those that stay inside the folder)"),
		bytes: z.number().int().describe("Bytes of file content copied"),
		skipped: z
			.number()
			.int()
			.describe("Entries left out: links that lead out of the folder, FIFOs, sockets, devices, unreadable ones"),
		skippedPaths: z
			.array(
				z
					.object({
						path: z.string().describe("Its path in the folder"),
						why: z.string().describe("Why it was left out"),
					})
					.openapi("SkippedPath", { description: "An entry of the folder the copy left out" }),
			)
			.describe("The first 100 entries left out, each with why"),
	})
	.openapi("FolderCopy", { description: "What the fork's copy of the original's folder holds" });

// One flat object (not allOf of Session): generators that read allOf poorly still type every field.
export const ForkedSession = z
	.object({
		...SessionView.shape,
		forkedFrom: z
			.object({
				sessionId: z.string().describe("The session forked"),
				entryId: z.string().nullable().describe("The entry its conversation ends at; null: the whole conversation"),
			})
			.describe("Where the new session came from"),
		folderCopy: FolderCopy,
	})
	.openapi("ForkedSession", {
		description: "The new session, and what it was made from",
		example: {
			...sessionExample,
			id: "ses_Rm9ya2VkT25l",
			cwd: "/var/lib/pi-gateway/workspaces/ses_Rm9ya2VkT25l",
			forkedFrom: { sessionId: "ses_Qm9wYXJ0aWFs", entryId: "a1b2c3d4" },
			folderCopy: {
				files: 12,
				folders: 3,
				links: 1,
				bytes: 48213,
				skipped: 1,
				skippedPaths: [{ path: "secrets", why: "a link that leads out of the folder" }],
			},
		},
	});

export const forkSession = createRoute({
	operationId: "sessions.forkSession",
	method: "post",
	path: "/v1/sessions/{id}/fork-session",
	tags: ["sessions"],
	summary: "Fork into a new session: a new id, the conversation up to an entry, a copy of the folder",
	description:
		"Makes a new session, the caller's, that continues this one's conversation up to `entryId` (inclusive; absent: all of it) in a copy of its folder; this session (its pi, its pi session file, its folder) is only read. Unlike `POST …/fork` and `…/clone`, which branch pi's conversation inside this same session. Anyone who may read this session may fork it (another principal's session is 404, as for GET); the new session counts against the caller's sessions and live slots like a create (429) and keeps this session's model, tools, extensions, prompts, client tools, policies and budget limits (its usage starts at zero). Its folder is `<caller's area>/<new id>`: files, folders and symlinks that stay inside the folder are copied, a symlink that leads out is left out (listed in `folderCopy.skippedPaths`); a folder over --workspace-max-fork-bytes (or 100,000 entries) is 413 `folder_too_large` before anything is made. docs/api.md says why a route of its own",
	request: {
		params: SessionParams,
		body: jsonBody(ForkSessionBody, { entryId: "a1b2c3d4" }),
	},
	responses: {
		201: {
			...json(ForkedSession, "The new session, ready for commands"),
			headers: z.object({ Location: z.string().openapi({ example: "/v1/sessions/ses_Rm9ya2VkT25l" }) }),
		},
		...problems(400, 401, 403, 410, 415, 429, 502, 503, 507),
		409: problem(
			"`conversation_not_kept`: the session keeps no pi session file (persist:false); `conversation_unreadable`: its file has no header, or is not a plain file; `folder_replaced`: its folder is no longer the folder it was given",
		),
		413: problem(
			"`folder_too_large`: the folder holds more than --workspace-max-fork-bytes of files or 100,000 entries; `conversation_too_large`: the pi session file is over 128 MiB; `body_too_large`: the request's body",
		),
		404: problem(
			"`session_not_found`: no such session, or another principal's; `entry_not_found`: the conversation has no entry `entryId`",
		),
	},
});
