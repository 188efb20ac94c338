import { createRoute, z } from "@hono/zod-openapi";
import { json, problem, problems } from "../../transport/openapi.ts";
import { pageQuery, SessionParams } from "../../transport/params.ts";

/** Every route on a session's folder: its path leads elsewhere now (paths.ts folderOf). */
export const folderReplaced = problem(
	"`folder_replaced`: a folder on the path of the session's folder was replaced by a link since it was checked",
);

const tags = ["workspace"];
const pathHelp =
	"Relative to the session's folder, `/`-separated. Resolved inside it, symlinks included (the last component too): anything that leads out is 403 `path_outside_root`";

const FilePath = z.object({
	path: z.string().min(1).max(4096).openapi({ description: pathHelp, example: "src/main.py" }),
});

const Binary = z.string().openapi({ format: "binary" });

export const Entry = z
	.object({
		name: z.string().describe("The entry's name"),
		path: z.string().openapi({ description: "Relative to the session's folder" }),
		type: z
			.enum(["file", "dir", "symlink", "other"])
			.openapi({ description: "Symlinks are listed, not followed; `other`: a FIFO, socket or device" }),
		size: z.number().int().describe("Its size in bytes (of the link itself, for a symlink)"),
		modifiedAt: z.string().openapi({ format: "date-time", description: "When it was last modified" }),
	})
	.openapi("WorkspaceEntry", { description: "One entry of a folder" });

export const listFiles = createRoute({
	operationId: "workspace.list",
	method: "get",
	path: "/v1/sessions/{id}/files",
	tags,
	summary: "List a folder of the session's workspace (paged, sorted by name)",
	request: {
		params: SessionParams,
		query: pageQuery("the entries after those").extend({
			path: z
				.string()
				.max(4096)
				.default("")
				.openapi({ description: `The folder (default: the session's folder itself). ${pathHelp}` }),
		}),
	},
	responses: {
		200: json(
			z
				.object({
					path: z.string().describe("The folder listed, relative to the session's folder (`` for itself)"),
					entries: z.array(Entry).describe("Its entries on this page, sorted by name"),
					nextCursor: z.string().nullable().describe("Pass as `cursor` for the next page; null on the last"),
				})
				.openapi("WorkspaceListing", {
					description: "A page of a folder's entries",
					example: {
						path: "src",
						entries: [
							{
								name: "main.py",
								path: "src/main.py",
								type: "file",
								size: 120,
								modifiedAt: "2026-12-01T10:00:03.000Z",
							},
						],
						nextCursor: null,
					},
				}),
			"A page of the folder's entries",
		),
		...problems(400, 401, 403, 404, 410),
		409: folderReplaced,
	},
});

const fileHeaders = {
	ETag: {
		description: "A strong validator of this version of the file (for If-Match, If-None-Match)",
		schema: { type: "string" as const },
	},
	"Accept-Ranges": { description: "`bytes`", schema: { type: "string" as const } },
	"Content-Length": { description: "Bytes in this answer", schema: { type: "integer" as const } },
};

export const readFile = createRoute({
	operationId: "workspace.read",
	method: "get",
	path: "/v1/sessions/{id}/files/content",
	tags,
	summary: "A file's bytes, with ETag and Range",
	description:
		"The Content-Type is the file's by its extension (`application/octet-stream` when unknown); the answer carries `Content-Security-Policy: sandbox` and `X-Content-Type-Options: nosniff`, so an HTML or SVG file of the agent's never runs script in the gateway's origin. One `Range: bytes=…` range is honoured (206), several get the whole file; `If-None-Match` with the current ETag is 304.",
	request: {
		params: SessionParams,
		query: FilePath,
		headers: z.object({
			range: z
				.string()
				.optional()
				.openapi({ description: "One byte range (RFC 9110), e.g. `bytes=0-1023`", example: "bytes=0-1023" }),
			"if-none-match": z.string().optional().openapi({
				description: "An ETag of this file from an earlier read: 304 without a body while it is still that version",
				example: '"1f3a9c0e7b"',
			}),
		}),
	},
	responses: {
		200: { description: "The file", headers: fileHeaders, content: { "application/octet-stream": { schema: Binary } } },
		206: {
			description: "The asked-for range",
			headers: {
				...fileHeaders,
				"Content-Range": { description: "`bytes START-END/SIZE`", schema: { type: "string" as const } },
			},
			content: { "application/octet-stream": { schema: Binary } },
		},
		304: { description: "Not modified (If-None-Match)", headers: { ETag: fileHeaders.ETag } },
		...problems(401, 403, 404, 410),
		409: folderReplaced,
		400: problem("Invalid input, or the path is a folder (`not_a_file`)"),
		416: problem("The range lies outside the file (`Content-Range: bytes */SIZE`)"),
	},
});

export const writeFile = createRoute({
	operationId: "workspace.write",
	method: "put",
	path: "/v1/sessions/{id}/files/content",
	tags,
	summary: "Upload a file: the raw body, streamed to disk; missing folders are made",
	description:
		"The body is the file's bytes (any Content-Type), written to a temporary file beside it and renamed into place. `If-Match: ETAG` (or `*`) replaces only that version (412 otherwise); `If-None-Match: *` creates only. A symlink as the last component is written through only when it points inside the folder. Bounded by --workspace-max-upload-bytes (413).",
	request: {
		params: SessionParams,
		query: FilePath,
		headers: z.object({
			"if-match": z
				.string()
				.optional()
				.openapi({ description: "Replace only this version (an ETag, or `*`: any existing file)" }),
			"if-none-match": z.string().optional().openapi({ description: "`*`: create only, never replace" }),
		}),
		body: { required: true, content: { "application/octet-stream": { schema: Binary } } },
	},
	responses: {
		201: {
			description: "Created",
			headers: {
				ETag: fileHeaders.ETag,
				Location: { description: "The file's content URL", schema: { type: "string" as const } },
			},
		},
		204: { description: "Replaced", headers: { ETag: fileHeaders.ETag } },
		...problems(400, 401, 403, 404, 410),
		409: problem("The path is a folder, or a component of it is a file; or `folder_replaced` (see the read)"),
		412: problem("If-Match or If-None-Match does not hold (`precondition_failed`)"),
		413: problem("The upload is larger than --workspace-max-upload-bytes"),
	},
});

export const deleteFile = createRoute({
	operationId: "workspace.delete",
	method: "delete",
	path: "/v1/sessions/{id}/files/content",
	tags,
	summary: "Delete a file (a symlink: the link, not its target)",
	request: { params: SessionParams, query: FilePath },
	responses: {
		204: { description: "Deleted" },
		...problems(400, 401, 403, 404, 410),
		409: problem("The path is a folder; or `folder_replaced` (see the read)"),
	},
});

export const searchFiles = createRoute({
	operationId: "workspace.search",
	method: "get",
	path: "/v1/sessions/{id}/files/search",
	tags,
	summary: "Search file names and text in the session's folder",
	description:
		"Fixed text, smart case (case-blind unless `q` has a capital letter). File names containing `q` come first (`line: null`), then matching lines. ripgrep when it is on the gateway's PATH (reads no ignore file of the folder, skips hidden files and node_modules), else a bounded built-in search (skips hidden files and node_modules); files over 1 MiB are skipped, lines cut to 300 characters; files with NUL bytes are searched too, a line holding one flagged `binary`. Capped by --workspace-max-search-results and --workspace-search-timeout-ms (`truncated`).",
	request: {
		params: SessionParams,
		query: z.object({
			q: z.string().min(1).max(1000).openapi({ description: "The text to find" }),
			glob: z
				.string()
				.max(500)
				.optional()
				.openapi({ description: "Only paths matching this glob (`*.py`, `src/**/*.ts`; no `/`: the base name)" }),
		}),
	},
	responses: {
		200: json(
			z
				.object({
					matches: z
						.array(
							z.object({
								path: z.string().describe("The file, relative to the session's folder"),
								line: z
									.number()
									.int()
									.nullable()
									.describe("The matching line's number, from 1; null: its name matched"),
								text: z.string().nullable().describe("The matching line; null: its name matched"),
								binary: z.boolean().optional().openapi({
									description:
										"`true`: the line holds a NUL byte (a binary file around the match); each NUL is shown as U+FFFD. Absent otherwise",
								}),
							}),
						)
						.describe("What matched, by path and line"),
					truncated: z.boolean().describe("More matched than are listed"),
					engine: z.enum(["ripgrep", "node"]).describe("What searched: ripgrep when on PATH, else the gateway"),
				})
				.openapi("WorkspaceSearchResult", {
					description: "What a search of the session's folder found",
					example: {
						matches: [{ path: "src/main.py", line: 3, text: "def main():" }],
						truncated: false,
						engine: "ripgrep",
					},
				}),
			"What was found",
		),
		...problems(400, 401, 403, 404, 410),
		409: folderReplaced,
	},
});
