/**
 * pi-gateway's warm-up, loaded into each pi the warm pool starts (from the bundled pi). pi loads the
 * code that speaks a model's API (its bundle's chunk for that API, with the SDK it imports) the
 * first time a prompt needs it, so a session's first prompt waits for that import: about 8 of the
 * 30 ms from prompt to model request measured here (BENCHMARKS.md 13c). Once the pooled pi's
 * session has started, this imports the chunk of its model, so it has it before its first prompt
 * comes; when the model changes, the new one's. Only pooled pis: a cold start would wait for this
 * file's load and the import before its session is ready, for the same few ms off its first prompt.
 *
 * It changes nothing pi does: the same file by the same URL is what pi's own import finds in
 * Node's module cache (jiti hands this file's import() to Node's own, as pi's package is an ES
 * module; were that to fail, jiti would run a copy of its own and nothing would be gained). A
 * bundle laid out otherwise (another pi version) gets no warm-up, and test/e2e/warm-up.test.ts
 * says so for the pi installed.
 */
import { readdirSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { KnownApi } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/**
 * The APIs pi speaks itself. A model's `api` is text from a models.json (an agent folder the agent
 * may write), so it only ever picks among these: never another of the bundle's chunks (its CLI, say).
 * bedrock-converse-stream is not one: pi loads it by another way (an unhashed chunk).
 */
export const warmedApis: ReadonlySet<string> = new Set<string>([
	"openai-completions",
	"mistral-conversations",
	"openai-responses",
	"azure-openai-responses",
	"openai-codex-responses",
	"anthropic-messages",
	"google-generative-ai",
	"google-vertex",
	"pi-messages",
] satisfies KnownApi[]);

/** pi's bundle names a lazy API chunk `<api>-<8-character hash>.js` (1.x). */
export function apiChunk(chunks: string[], api: string): string | undefined {
	if (!warmedApis.has(api)) return undefined;
	return chunks.find((name) => name.startsWith(`${api}-`) && /^[A-Z0-9]{8}\.js$/.test(name.slice(api.length + 1)));
}

/** The running pi's bundle chunks folder, from its entry script (dist/bundle/cli.js). */
export function chunksDir(entry: string | undefined = process.argv[1]): string | undefined {
	try {
		return entry ? join(dirname(realpathSync(entry)), "chunks") : undefined;
	} catch {
		return undefined;
	}
}

export default function (pi: ExtensionAPI) {
	const warmed = new Set<string>();
	const warm = (api: string | undefined, later: boolean) => {
		if (!api || warmed.has(api)) return;
		warmed.add(api);
		// After the handler returns: the session's start does not wait for it.
		const load = () => {
			const dir = chunksDir();
			if (!dir) return;
			let chunk: string | undefined;
			try {
				chunk = apiChunk(readdirSync(dir), api);
			} catch {
				return;
			}
			if (chunk) import(pathToFileURL(join(dir, chunk)).href).catch(() => {});
		};
		// A model set on a pooled pi (a create naming one: the gateway's set_model) is followed by the
		// create's own commands (get_state, the model check): the import, ≈ 40 ms of pi's loop under
		// load, comes after them, not in the create's answer. A prompt sent sooner has pi import it itself.
		if (later) setTimeout(load, 100);
		else setImmediate(load);
	};
	pi.on("session_start", (_event, ctx) => warm(ctx.model?.api, false));
	pi.on("model_select", (event) => warm(event.model.api, true));
}
