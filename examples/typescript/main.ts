/**
 * pi-gateway from TypeScript, through a client typed by openapi.yaml (`npm run sdk:types` writes
 * schema.d.ts with openapi-typescript; openapi-fetch does the calls). It creates a session, streams
 * a prompt whose bash command a gate extension must approve, approves it when the dialog shows up
 * in the stream, prints the reply as it streams, and deletes the session.
 *
 *   node examples/typescript/main.ts          (Node 22.19+; run a gateway first, see the README)
 *
 * PI_GATEWAY_URL    the gateway (default http://127.0.0.1:8787)
 * PI_GATEWAY_TOKEN  its bearer token; when unset, read from the file the gateway keeps it in,
 *                   $PI_GATEWAY_DATA_DIR/token (default ~/.pi-gateway/token)
 * PI_GATEWAY_GATE   the allow-list name of the extension that asks before `rm -rf` (default permission-gate)
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.d.ts";

type StreamEvent = components["schemas"]["StreamEvent"];
type Approval = components["schemas"]["Approval"];
type ApprovalAnswer = components["schemas"]["ApprovalAnswer"];

const baseUrl = process.env.PI_GATEWAY_URL ?? "http://127.0.0.1:8787";
const tokenFile = join(process.env.PI_GATEWAY_DATA_DIR ?? join(homedir(), ".pi-gateway"), "token");
const token = process.env.PI_GATEWAY_TOKEN ?? readTokenFile(tokenFile);
const gate = process.env.PI_GATEWAY_GATE ?? "permission-gate";
const prompt = "bash: rm -rf ./pi-gateway-scratch && echo removed";

const client = createClient<paths>({ baseUrl, headers: token ? { Authorization: `Bearer ${token}` } : {} });

function readTokenFile(path: string): string | undefined {
	try {
		return readFileSync(path, "utf8").trim();
	} catch {
		return undefined;
	}
}

function fail(what: string, problem: unknown): never {
	throw new Error(`${what} failed: ${JSON.stringify(problem)}`);
}

/** Server-Sent Events → the JSON of each frame's `data:` (comments and heartbeats skipped). */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
	const decoder = new TextDecoder();
	let buffer = "";
	for await (const chunk of body) {
		buffer += decoder.decode(chunk, { stream: true });
		for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
			const data = buffer
				.slice(0, end)
				.split("\n")
				.filter((line) => line.startsWith("data:"))
				.map((line) => line.slice(5).replace(/^ /, ""))
				.join("\n");
			buffer = buffer.slice(end + 2);
			if (data) yield JSON.parse(data) as StreamEvent;
		}
	}
}

/** This example approves; a real client would ask a person (the approval says what and why). */
function decide(approval: Approval): ApprovalAnswer {
	if (approval.method === "confirm") return { confirmed: true, by: "sdk-example" };
	const allow = approval.options?.find((o) => /allow|yes/i.test(o)) ?? approval.options?.[0];
	return allow === undefined ? { cancelled: true, by: "sdk-example" } : { value: allow, by: "sdk-example" };
}

async function answer(sessionId: string, approval: Approval): Promise<void> {
	console.log(`approval requested (${approval.method}): ${approval.title} ${approval.message ?? ""}`.trimEnd());
	const { data, error } = await client.POST("/v1/sessions/{id}/approvals/{approvalId}", {
		params: { path: { id: sessionId, approvalId: approval.id } },
		body: decide(approval),
	});
	if (!data) fail("answering the approval", error);
	console.log(`approval ${data.status}: ${JSON.stringify(data.answer)}`);
}

const created = await client.POST("/v1/sessions", { body: { name: "sdk-example", extensions: [gate] } });
if (!created.data) fail("creating a session", created.error);
const id = created.data.id;
console.log(`session ${id} is ${created.data.status} (model ${created.data.model?.id})`);
try {
	console.log(`> ${prompt}`);
	// The streamed variant of prompt is its own operation, typed as a stream of StreamEvent.
	const run = await client.POST("/v1/sessions/{id}/prompt/stream", {
		params: { path: { id } },
		body: { message: prompt },
		parseAs: "stream",
	});
	if (!run.data) fail("prompting", run.error);
	for await (const event of events(run.data)) {
		if (event.type === "approval_requested") await answer(id, event.approval);
		else if (event.type === "tool_execution_end") console.log(`tool ${event.toolName} finished`);
		else if (event.type === "message_update") {
			const update = event.assistantMessageEvent;
			if (update.type === "text_start") process.stdout.write("assistant: ");
			else if (update.type === "text_delta") process.stdout.write(String(update.delta));
			else if (update.type === "text_end") process.stdout.write("\n");
		} else if (event.type === "agent_settled") console.log(`run settled (aborted: ${event.aborted})`);
	}
} finally {
	const { response } = await client.DELETE("/v1/sessions/{id}", { params: { path: { id } } });
	console.log(`session ${id} deleted (HTTP ${response.status})`);
}
