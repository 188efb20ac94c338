import { createRoute, z } from "@hono/zod-openapi";
import { json, problem, problems } from "../../transport/openapi.ts";
import { SessionParams } from "../../transport/params.ts";
import { folderReplaced } from "./files.routes.ts";

const tags = ["workspace"];

export const FileChange = z
	.object({
		path: z.string().describe("The file's path in the session's folder"),
		status: z.enum(["added", "modified", "deleted"]).describe("What happened to it"),
		binary: z.boolean().openapi({ description: "git's test (a NUL byte near the start): no diff is given" }),
		diff: z.string().nullable().openapi({
			description: "Unified diff (`diff --git …`, 3 lines of context); null for a binary file or past the caps",
		}),
		truncated: z.boolean().openapi({
			description:
				"The diff was left out: larger than --workspace-max-diff-bytes, or past --workspace-max-changes-bytes",
		}),
	})
	.openapi("WorkspaceFileChange", { description: "One changed file, with its diff" });

export const changes = createRoute({
	operationId: "workspace.changes",
	method: "get",
	path: "/v1/sessions/{id}/changes",
	tags,
	summary: "What changed in the session's folder: since the session started, or in one run",
	description:
		"Without `runId`: the folder now against a snapshot taken when the session started (uploads and `bash` commands included). With `runId` (a prompt's `runId` that started a run): the folder when that run settled against a snapshot taken just before its prompt reached pi (a run still going: against now). Snapshots live in a shadow git repository under the gateway's data dir, never in the folder; every file is tracked (the folder's .gitignore hides nothing, its .gitattributes changes nothing git stores or shows). The last 100 runs of a session are kept; what no kept run needs is pruned. A session's snapshots are bounded by --workspace-max-snapshot-bytes (past it, 507 `snapshot_limit`). Capped by --workspace-max-changed-files, --workspace-max-diff-bytes and --workspace-max-changes-bytes.",
	request: {
		params: SessionParams,
		query: z.object({
			runId: z
				.string()
				.regex(/^[\w.-]{1,100}$/)
				.optional()
				.openapi({ description: "A run's id (from the prompt's answer)", example: "gw_1" }),
		}),
	},
	responses: {
		200: json(
			z
				.object({
					runId: z.string().nullable().describe("The run asked about; null: since the session started"),
					files: z.array(FileChange).describe("The changed files, by path"),
					truncated: z.boolean().openapi({ description: "More files changed than are listed, or the diffs were cut" }),
					unreadable: z.array(z.string()).optional().openapi({
						description:
							"Files git could not read for the later snapshot (a tracked file replaced by a FIFO, say; at most 100): it has them as an earlier snapshot had them, so an edit to them is not in `files`. Absent when every file was read",
					}),
				})
				.openapi("WorkspaceChanges", {
					description: "What changed in the session's folder",
					example: {
						runId: "gw_1",
						files: [
							{
								path: "hello.txt",
								status: "added",
								binary: false,
								diff: "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello\n",
								truncated: false,
							},
						],
						truncated: false,
					},
				}),
			"The changed files with their diffs",
		),
		...problems(400, 401, 403, 410),
		409: folderReplaced,
		404: problem("No such session, or no settled run with this id (`run_not_found`)"),
		501: problem(
			"Change tracking is off (--no-workspace-changes) or git is not on the gateway's PATH (`changes_unavailable`)",
		),
		503: problem("The folder could not be snapshotted (`snapshot_failed`); try again"),
		507: problem(
			"The session's snapshots stopped: its shadow repository would pass --workspace-max-snapshot-bytes (`snapshot_limit`), and this answer needs a snapshot it refused",
		),
	},
});

export const archive = createRoute({
	operationId: "workspace.archive",
	method: "get",
	path: "/v1/sessions/{id}/archive",
	tags,
	summary: "The session's folder as a gzip'd tar, streamed",
	description:
		"Every file, folder and symlink (as a link, never followed), names sorted. The folder is listed first, so a folder over --workspace-max-archive-bytes (bytes of its files) or 200,000 entries is a 413 before any byte is sent; then files are read one chunk at a time as the client takes them. A file that changes while it is sent keeps the size it was listed with (cut or zero-filled).",
	request: { params: SessionParams },
	responses: {
		200: {
			description: "The archive",
			headers: {
				"Content-Disposition": {
					description: "`attachment; filename=<session id>.tar.gz`",
					schema: { type: "string" as const },
				},
			},
			content: { "application/gzip": { schema: z.string().openapi({ format: "binary" }) } },
		},
		...problems(401, 403, 404, 410),
		409: folderReplaced,
		413: problem("The folder is larger than --workspace-max-archive-bytes (`archive_too_large`)"),
	},
});
