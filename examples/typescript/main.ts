/**
 * pi-gateway from TypeScript, through the package's own client (`pi-gateway/client`; in this
 * repository its source, src/client). It creates a session, streams a prompt whose bash
 * command a gate extension must approve, approves it when the dialog shows up in the stream,
 * prints the reply as it streams, and deletes the session. The stream resumes by itself with
 * Last-Event-ID if the connection breaks.
 *
 *   node examples/typescript/main.ts          (Node 22.19+; run a gateway first, see the README)
 *
 * PI_GATEWAY_URL    the gateway (default http://127.0.0.1:8787)
 * PI_GATEWAY_TOKEN  its bearer token; when unset, read from the file the gateway keeps it in,
 *                   $PI_GATEWAY_DATA_DIR/token (default ~/.pi-gateway/token)
 * PI_GATEWAY_GATE   the allow-list name of the extension that asks before `rm -rf` (default permission-gate)
 */
// Outside this repository: import { … } from "pi-gateway/client";

import { type Approval, type ApprovalAnswer, GatewayError, PiGateway } from "../../src/client/index.ts";
import { baseUrl, token } from "./connection.ts";

const gate = process.env.PI_GATEWAY_GATE ?? "permission-gate";
const prompt = "bash: rm -rf ./pi-gateway-scratch && echo removed";

const gw = new PiGateway({ baseUrl, token });

/** This example approves; a real client would ask a person (the approval says what and why). */
function decide(approval: Approval): ApprovalAnswer {
	if (approval.method === "confirm") return { confirmed: true, by: "sdk-example" };
	const allow = approval.options?.find((o) => /allow|yes/i.test(o)) ?? approval.options?.[0];
	return allow === undefined ? { cancelled: true, by: "sdk-example" } : { value: allow, by: "sdk-example" };
}

async function answer(approval: Approval): Promise<void> {
	console.log(`approval requested (${approval.method}): ${approval.title} ${approval.message ?? ""}`.trimEnd());
	const resolved = await gw.approvals.answer(approval, decide(approval));
	console.log(`approval ${resolved.status}: ${JSON.stringify(resolved.answer)}`);
}

async function main(): Promise<void> {
	const session = await gw.createSession({ name: "sdk-example", extensions: [gate] });
	const id = session.id;
	console.log(`session ${id} is ${session.status} (model ${session.model?.id})`);
	try {
		console.log(`> ${prompt}`);
		// An async iterator of StreamEvent (narrow on `type`), from pi's answer to the run's agent_settled.
		for await (const event of gw.promptStream(id, { message: prompt })) {
			if (event.type === "approval_requested") await answer(event.approval);
			else if (event.type === "tool_execution_end") console.log(`tool ${event.toolName} finished`);
			else if (event.type === "message_update") {
				const update = event.assistantMessageEvent;
				if (update.type === "text_start") process.stdout.write("assistant: ");
				else if (update.type === "text_delta") process.stdout.write(String(update.delta));
				else if (update.type === "text_end") process.stdout.write("\n");
			} else if (event.type === "agent_settled") console.log(`run settled (aborted: ${event.aborted})`);
		}
	} finally {
		const res = await gw.raw("DELETE", "/v1/sessions/{id}", { path: { id } });
		console.log(`session ${id} deleted (HTTP ${res.status})`);
	}
}

try {
	await main();
} catch (error) {
	// Every problem+json answer arrives as a GatewayError ("HTTP 401 unauthorized: …").
	if (!(error instanceof GatewayError)) throw error;
	console.error(`pi-gateway: ${error.message}`);
	process.exitCode = 1;
}
