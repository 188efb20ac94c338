import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { registerRunTools } from "./run-tools.ts";
import { registerSessionResources } from "./session-resources.ts";
import { registerSessionTools } from "./session-tools.ts";
import type { ToolContext } from "./tool-context.ts";

const instructions = `pi-gateway runs pi coding agents, each session in a folder of its own with tools (bash, read, edit, write).
Delegate a task: start_session, then prompt (it waits for the run and sends progress notifications).
When prompt answers status "awaiting_approval", a dialog (a permission gate, say) waits: answer it with answer_approval, then wait_for_run.
get_changes shows the files a run changed, with diffs. Sessions are also resources (pi-gateway://sessions/{id}).`;

/**
 * One MCP session's server (the SDK's McpServer serves one transport). Its tools and resources
 * call the gateway's public API as the caller: they add no rule of their own.
 */
export function mcpServer(ctx: ToolContext, version: string): McpServer {
	const server = new McpServer(
		{ name: "pi-gateway", title: "pi-gateway", version },
		{ instructions, capabilities: { tools: {}, resources: {} }, maxToolInputElements: 1000 },
	);
	registerSessionTools(server, ctx);
	registerRunTools(server, ctx);
	registerSessionResources(server, ctx);
	return server;
}
