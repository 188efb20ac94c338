/**
 * A session's folder from the typed client: upload a file, run a prompt whose bash command changes
 * it, print the run's diff, read the file back, delete the session.
 *
 *   node examples/typescript/workspace.ts      (Node 22.19+; run a gateway first)
 *
 * PI_GATEWAY_URL and PI_GATEWAY_TOKEN (or the token file) as for every example: connection.ts.
 */
import createClient from "openapi-fetch";
import type { paths } from "../../src/client/schema.ts";
import { baseUrl, token } from "./connection.ts";

const client = createClient<paths>({ baseUrl, headers: token ? { Authorization: `Bearer ${token}` } : {} });

const created = await client.POST("/v1/sessions", { body: { name: "workspace-example" } });
if (!created.data) throw new Error(`creating a session failed: ${JSON.stringify(created.error)}`);
const id = created.data.id;
try {
	// The body is the file's bytes, sent as they are (not JSON).
	const upload = await client.PUT("/v1/sessions/{id}/files/content", {
		params: { path: { id }, query: { path: "notes/todo.txt" } },
		body: "buy milk\n",
		bodySerializer: (text) => text,
		headers: { "Content-Type": "application/octet-stream" },
	});
	if (upload.error) throw new Error(`upload failed: ${JSON.stringify(upload.error)}`);
	const run = await client.POST("/v1/sessions/{id}/prompt", {
		params: { path: { id }, query: { wait: 60 } },
		body: { message: "bash: printf 'call mum\\n' >> notes/todo.txt" },
	});
	if (!run.data) throw new Error(`prompting failed: ${JSON.stringify(run.error)}`);
	const changes = await client.GET("/v1/sessions/{id}/changes", {
		params: { path: { id }, query: { runId: run.data.runId } },
	});
	if (!changes.data) throw new Error(`changes failed: ${JSON.stringify(changes.error)}`);
	for (const file of changes.data.files) console.log(`${file.status} ${file.path}\n${file.diff ?? "(no diff)"}`);
	const read = await client.GET("/v1/sessions/{id}/files/content", {
		params: { path: { id }, query: { path: "notes/todo.txt" } },
		parseAs: "text",
	});
	process.stdout.write(`now:\n${read.data}`);
} finally {
	await client.DELETE("/v1/sessions/{id}", { params: { path: { id } } });
}
