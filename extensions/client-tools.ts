/**
 * pi-gateway's client tools: the tools a session declared at create (`clientTools`), which the
 * calling program runs. The gateway loads this extension for such a session and passes the
 * definitions in PI_CLIENT_TOOLS (removed from the environment here at once, so the agent's own
 * commands do not inherit it; the definitions are not secret). When the model calls one, the
 * tool opens an editor dialog whose prefill is the call as JSON; the gateway recognises it (title
 * and a matching tool_execution_start) and makes it a tool call resource, never an approval. The
 * program's answer comes back as the dialog's value: {"output": text | content blocks, "isError"}.
 * A dismissed dialog (pi's own cancel) is an error result, so the model never hangs on it.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** Kept in step with src/sessions/dialogs/client-tools.ts (an extension imports nothing of the gateway's). */
const dialogTitle = "pi-gateway client tool";
const envName = "PI_CLIENT_TOOLS";

type Definition = { name: string; description: string; parameters: Record<string, unknown> };
type Block = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };

function definitions(): Definition[] {
	const raw = process.env[envName];
	delete process.env[envName];
	if (!raw) return [];
	try {
		const parsed = JSON.parse(raw) as unknown;
		return Array.isArray(parsed) ? (parsed as Definition[]) : [];
	} catch {
		return [];
	}
}

/** The dialog's value as a tool result; anything else (a cancel, garbage) is an error result. */
function resultOf(value: string | undefined): { content: Block[]; isError: boolean } {
	if (value === undefined) return { content: [{ type: "text", text: "The program did not answer" }], isError: true };
	try {
		const { output, isError } = JSON.parse(value) as { output: unknown; isError?: unknown };
		const content: Block[] = typeof output === "string" ? [{ type: "text", text: output }] : (output as Block[]);
		if (!Array.isArray(content)) throw new Error("no output");
		return { content, isError: isError === true };
	} catch {
		return { content: [{ type: "text", text: "The program's answer could not be read" }], isError: true };
	}
}

export default function (pi: ExtensionAPI) {
	for (const tool of definitions()) {
		pi.registerTool({
			name: tool.name,
			label: tool.name,
			description: tool.description,
			promptSnippet: tool.description.split("\n")[0],
			parameters: tool.parameters as never,
			async execute(toolCallId, params, _signal, _onUpdate, ctx) {
				const call = JSON.stringify({ toolCallId, name: tool.name, arguments: params });
				const value = await ctx.ui.editor(dialogTitle, call);
				const { content, isError } = resultOf(value);
				return { content, details: undefined, isError };
			},
		});
	}
}
