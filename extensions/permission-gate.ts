/**
 * pi-gateway's example permission gate: before pi's bash tool runs a dangerous command, ask a
 * person. Over pi-gateway the question becomes an approval (GET /v1/approvals?status=pending)
 * that anyone with the API answers with {"value":"Allow"} or {"value":"Block"}.
 *
 * Load it through the gateway's extension allow-list:
 *   node src/main.ts --extension gate=$PWD/extensions/permission-gate.ts
 *   POST /v1/sessions {"extensions":["gate"]}
 *
 * Anything but "Allow" blocks the command, so a dismissed (cancelled) or expired dialog, an
 * aborted run or a gateway policy timeout (--approval-timeout-ms) all fail safe.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const dangerous = [
	/\brm\s+(-[a-z]*[rf][a-z]*|--recursive|--force)\b/i,
	/\bsudo\b/i,
	/\b(chmod|chown)\b.*\b777\b/i,
	/\bmkfs(\.\w+)?\b/i,
	/\bdd\b.*\bof=/i,
	/>\s*\/dev\/(sd|nvme|disk)/i,
];

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", async (event, ctx) => {
		if (event.toolName !== "bash") return undefined;
		const command = String((event.input as { command?: unknown }).command ?? "");
		if (!dangerous.some((pattern) => pattern.test(command))) return undefined;
		if (!ctx.hasUI) return { block: true, reason: "Dangerous command blocked: nobody to ask" };

		const choice = await ctx.ui.select(`Allow this bash command?\n\n  ${command}`, ["Allow", "Block"]);
		if (choice === "Allow") {
			ctx.ui.notify(`Allowed: ${command}`, "info");
			return undefined;
		}
		ctx.ui.notify(`Blocked: ${command}`, "warning");
		return { block: true, reason: `Blocked by the permission gate (${choice ?? "no answer"})` };
	});
}
