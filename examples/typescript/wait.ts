/**
 * A JSON call through the openapi-typescript + openapi-fetch client: a prompt in wait mode. Its
 * answer is typed `RunResult` (200, the run settled) or `RunAccepted` (202, the wait ran out
 * first); streams have operations of their own (`…/prompt/stream`), so they are not in this union.
 *
 *   node examples/typescript/wait.ts "echo: hello"      (Node 22.19+; run a gateway first)
 *
 * PI_GATEWAY_URL and PI_GATEWAY_TOKEN (or the token file) as for every example: connection.ts.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "../../src/client/schema.ts";
import { baseUrl, token } from "./connection.ts";

type RunResult = components["schemas"]["RunResult"];
type RunAccepted = components["schemas"]["RunAccepted"];

const client = createClient<paths>({ baseUrl, headers: token ? { Authorization: `Bearer ${token}` } : {} });

const created = await client.POST("/v1/sessions", { body: { name: "wait-example" } });
if (!created.data) throw new Error(`creating a session failed: ${JSON.stringify(created.error)}`);
const id = created.data.id;
try {
	const p = await client.POST("/v1/sessions/{id}/prompt", {
		params: { path: { id }, query: { wait: 60 } },
		body: { message: process.argv[2] ?? "echo: hello" },
	});
	if (!p.data) throw new Error(`prompting failed: ${JSON.stringify(p.error)}`);
	const answer: RunResult | RunAccepted = p.data;
	if ("text" in p.data) console.log(`${p.data.text} (${p.data.stopReason}; run ${answer.runId})`);
	else console.log(`still running; follow ${p.data.eventsUrl}`);
} finally {
	await client.DELETE("/v1/sessions/{id}", { params: { path: { id } } });
}
