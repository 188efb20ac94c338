import { Readable, Writable } from "node:stream";
import { ndJsonStream } from "@agentclientprotocol/sdk";
import { createBridge } from "./agent.ts";
import { acpUsage, parseAcpArgs } from "./args.ts";
import { connectGateway } from "./gateway.ts";

/**
 * `pi-gateway acp`: the ACP agent on stdio (JSON-RPC lines, as editors launch agents), every
 * session on the gateway at --url. stdout is the protocol's alone: logs go to stderr.
 */
export async function acpCommand(argv: string[], version: string): Promise<void> {
	// Asked for, the usage goes to stdout like any --help: no editor is on the other end then.
	if (argv.includes("--help") || argv.includes("-h")) {
		process.stdout.write(`${acpUsage}\n`);
		return;
	}
	const args = withHelp(() => parseAcpArgs(argv));
	const log = (line: string) => process.stderr.write(`${line}\n`);
	const gateway = connectGateway({ url: args.url, token: args.token, log });
	const bridge = createBridge({
		gateway,
		version,
		extensions: args.extensions,
		model: args.model,
		cwdMap: args.cwdMap,
		log,
	});
	const stream = ndJsonStream(
		Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
		Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
	);
	log(`pi-gateway acp: bridging stdio to ${args.url}`);
	const connection = bridge.connect(stream);
	await connection.closed;
}

/** node:util's refusal of an unknown option or a missing value, with where to read the options. */
function withHelp<T>(parse: () => T): T {
	try {
		return parse();
	} catch (error) {
		const code = (error as { code?: string }).code;
		if (code?.startsWith("ERR_PARSE_ARGS_"))
			throw new Error(`${(error as Error).message.split(". ")[0]} (pi-gateway acp --help lists the options)`);
		throw error;
	}
}
