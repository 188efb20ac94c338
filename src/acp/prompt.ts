import type { AvailableCommand, ContentBlock } from "@agentclientprotocol/sdk";

/**
 * An ACP prompt → pi's prompt fields: text as the message, images as images, embedded
 * resources as their text (a fenced block named by its URI), links as their URI.
 */
export function promptBody(prompt: ContentBlock[]): {
	message: string;
	images?: { type: "image"; data: string; mimeType: string }[];
} {
	const parts: string[] = [];
	const images: { type: "image"; data: string; mimeType: string }[] = [];
	for (const block of prompt) {
		if (block.type === "text") parts.push(block.text);
		else if (block.type === "image") images.push({ type: "image", data: block.data, mimeType: block.mimeType });
		else if (block.type === "resource_link") parts.push(`@${block.uri}`);
		else if (block.type === "resource" && "text" in block.resource)
			parts.push(`<context uri="${block.resource.uri}">\n${block.resource.text}\n</context>`);
	}
	return images.length ? { message: parts.join("\n\n"), images } : { message: parts.join("\n\n") };
}

/** pi's slash commands → ACP's available commands (run as a prompt `/name args`). */
export function availableCommands(commands: { name: string; description?: string }[]): AvailableCommand[] {
	return commands.map((command) => ({
		name: command.name,
		description: command.description ?? "",
		input: { hint: "arguments" },
	}));
}
