import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

export const acpUsage = [
	"Usage: pi-gateway acp --url GW [--extensions a,b] [--model provider/id] [--cwd-map LOCAL=REMOTE]… [--token-file F]",
	"",
	"The ACP agent on stdio for editors (Zed, …): every session runs on the gateway at --url.",
	"",
	"Options",
	"  --url <url>              the gateway's http(s) URL (env PI_GATEWAY_URL)",
	"  --extensions <a,b>       extensions each new session loads (the gateway's allow-list; repeatable as --extension)",
	"  --model <provider/id>    the model of new sessions (default: the gateway's)",
	"  --cwd-map <LOCAL=REMOTE> an editor folder (absolute) → the gateway's folder for it; repeatable",
	"  --token-file <file>      file holding the credential (env PI_GATEWAY_TOKEN_FILE; --api-key-file is the same)",
	"  -h, --help               this text",
	"",
	"Credential",
	"  The gateway's token or an API key's secret: PI_GATEWAY_TOKEN, else --token-file / PI_GATEWAY_TOKEN_FILE,",
	"  else <data-dir>/token (PI_GATEWAY_DATA_DIR, ~/.pi-gateway); never from argv (readable in /proc).",
	"",
	"stdout carries only ACP; logs go to stderr. Setup for an editor: docs/editors.md.",
].join("\n");

export interface AcpArgs {
	url: string;
	token: string | undefined;
	extensions: string[];
	model?: { provider: string; id: string };
	cwdMap: [string, string][];
}

/**
 * `pi-gateway acp …` → its settings. The credential is read from the environment or a file,
 * never from argv (every local process can read /proc/PID/cmdline); a --token flag is refused.
 */
export function parseAcpArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): AcpArgs {
	if (argv.some((arg) => arg === "--token" || arg.startsWith("--token=")))
		throw new Error(
			`--token: not on argv (it is readable in /proc); use PI_GATEWAY_TOKEN or --token-file\n${acpUsage}`,
		);
	const { values } = parseArgs({
		args: argv,
		options: {
			url: { type: "string" },
			extensions: { type: "string" },
			extension: { type: "string", multiple: true },
			model: { type: "string" },
			"cwd-map": { type: "string", multiple: true },
			"token-file": { type: "string" },
			"api-key-file": { type: "string" },
		},
		strict: true,
	});
	const url = values.url ?? env.PI_GATEWAY_URL;
	if (!url || !/^https?:\/\//.test(url)) throw new Error(`--url: the gateway's http(s) URL\n${acpUsage}`);
	const list = (s: string | undefined) =>
		(s ?? "")
			.split(",")
			.map((x) => x.trim())
			.filter(Boolean);
	const extensions = [...list(values.extensions), ...(values.extension ?? []).flatMap(list)];
	let model: AcpArgs["model"];
	if (values.model) {
		const slash = values.model.indexOf("/");
		if (slash < 1 || slash === values.model.length - 1) throw new Error("--model: provider/id");
		model = { provider: values.model.slice(0, slash), id: values.model.slice(slash + 1) };
	}
	const cwdMap = (values["cwd-map"] ?? []).map((pair): [string, string] => {
		const at = pair.indexOf("=");
		if (at < 1 || !pair.startsWith("/"))
			throw new Error(`--cwd-map: LOCAL=REMOTE with an absolute LOCAL, got ${JSON.stringify(pair)}`);
		return [pair.slice(0, at), pair.slice(at + 1)];
	});
	return { url, token: credential(values["token-file"] ?? values["api-key-file"], env), extensions, model, cwdMap };
}

function credential(file: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
	if (env.PI_GATEWAY_TOKEN) return env.PI_GATEWAY_TOKEN.trim();
	const path = file ?? env.PI_GATEWAY_TOKEN_FILE;
	if (path) return readFileSync(path, "utf8").trim();
	const fallback = join(env.PI_GATEWAY_DATA_DIR ?? join(homedir(), ".pi-gateway"), "token");
	return existsSync(fallback) ? readFileSync(fallback, "utf8").trim() : undefined;
}
