/**
 * The environment a pi child gets: built from an allow-list, never copied. pi's tools run whatever
 * the model asks, so anything in this environment is readable by the agent; the gateway's own
 * settings (PI_GATEWAY_*, its token above all) must never be in it.
 */

/** Names passed through as they are: what a shell, Node and pi's network stack need. */
const system = [
	"PATH",
	"HOME",
	"USER",
	"LOGNAME",
	"SHELL",
	"TERM",
	"LANG",
	"LANGUAGE",
	"TZ",
	"TMPDIR",
	// Outbound proxies and private CAs: pi must reach its model provider the way the operator does.
	"HTTP_PROXY",
	"HTTPS_PROXY",
	"NO_PROXY",
	"ALL_PROXY",
	"http_proxy",
	"https_proxy",
	"no_proxy",
	"all_proxy",
	"NODE_EXTRA_CA_CERTS",
	"SSL_CERT_FILE",
	"SSL_CERT_DIR",
];

/**
 * Provider credentials and settings pi 1.6 reads (pi-ai's env-api-keys.js and providers, and
 * pi-coding-agent's docs/providers.md). A provider added by a later pi needs `--pass-env`.
 */
const providers = [
	"AI_GATEWAY_API_KEY",
	"ANT_LING_API_KEY",
	"AZURE_OPENAI_API_KEY",
	"AZURE_OPENAI_API_VERSION",
	"AZURE_OPENAI_BASE_URL",
	"AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
	"AZURE_OPENAI_RESOURCE_NAME",
	"BASETEN_API_KEY",
	"CEREBRAS_API_KEY",
	"CLOUDFLARE_ACCOUNT_ID",
	"CLOUDFLARE_API_KEY",
	"CLOUDFLARE_GATEWAY_ID",
	"CLOUDSDK_CONFIG",
	"COPILOT_GITHUB_TOKEN",
	"DEEPSEEK_API_KEY",
	"FIREWORKS_API_KEY",
	"GCLOUD_PROJECT",
	"GEMINI_API_KEY",
	"GOOGLE_APPLICATION_CREDENTIALS",
	"GOOGLE_CLOUD_API_KEY",
	"GOOGLE_CLOUD_LOCATION",
	"GOOGLE_CLOUD_PROJECT",
	"GOOGLE_CLOUD_QUOTA_PROJECT",
	"GROQ_API_KEY",
	"HF_TOKEN",
	"KIMI_API_KEY",
	"META_API_KEY",
	"MINIMAX_API_KEY",
	"MINIMAX_CN_API_KEY",
	"MISTRAL_API_KEY",
	"MOONSHOT_API_KEY",
	"NVIDIA_API_KEY",
	"OPENAI_API_KEY",
	"OPENCODE_API_KEY",
	"OPENROUTER_API_KEY",
	"QWEN_TOKEN_PLAN_API_KEY",
	"QWEN_TOKEN_PLAN_CN_API_KEY",
	"QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
	"QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
	"QWEN_TOKEN_PLAN_TEAM_API_KEY",
	"QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
	"RADIUS_API_KEY",
	"TOGETHER_API_KEY",
	"TYPESAFE_API_KEY",
	"XAI_API_KEY",
	"XIAOMI_API_KEY",
	"XIAOMI_TOKEN_PLAN_AMS_API_KEY",
	"XIAOMI_TOKEN_PLAN_CN_API_KEY",
	"XIAOMI_TOKEN_PLAN_SGP_API_KEY",
	"ZAI_API_KEY",
	"ZAI_CODING_CN_API_KEY",
];

/** Families whose SDKs read many variables (the AWS SDK alone reads dozens for Bedrock). */
const providerPrefixes = ["ANTHROPIC_", "AWS_", "LC_"];

/** pi's own settings (docs/environment-variables.md), minus the terminal-only ones. */
const pi = [
	"PI_CODING_AGENT_DIR",
	"PI_PACKAGE_DIR",
	"PI_OFFLINE",
	"PI_SKIP_VERSION_CHECK",
	"PI_TELEMETRY",
	"PI_CODEMODE_MAX_WORKERS",
	"PI_CACHE_RETENTION",
	"PI_SHARE_VIEWER_URL",
];

const allowed = new Set([...system, ...providers, ...pi]);

/** The gateway's own namespace: never passed, not even when asked for by name. */
export const gatewayPrefix = "PI_GATEWAY_";

/** True when `name` may reach a pi child without being asked for. */
export function isAllowedByDefault(name: string): boolean {
	if (name.startsWith(gatewayPrefix)) return false;
	return allowed.has(name) || providerPrefixes.some((prefix) => name.startsWith(prefix));
}

/** Names a `--pass-env` entry may carry: a plain variable name, not the gateway's own. */
export function checkPassEnvName(name: string): string | undefined {
	if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return `${JSON.stringify(name)} is not a variable name`;
	if (name.startsWith(gatewayPrefix)) return `${name}: the gateway's own variables never reach pi`;
	return undefined;
}

export interface ChildEnvOptions {
	/** Extra names the operator allowed with --pass-env. */
	passEnv?: readonly string[];
	/** Set last, over whatever the source had (PI_OFFLINE for the demo, PI_CODING_AGENT_DIR, …). */
	set?: Readonly<Record<string, string | undefined>>;
}

/** The child's environment: the allowed subset of `source`, then `set` (an undefined value removes). */
export function childEnv(source: NodeJS.ProcessEnv, options: ChildEnvOptions = {}): Record<string, string> {
	const extra = new Set((options.passEnv ?? []).filter((name) => !name.startsWith(gatewayPrefix)));
	const env: Record<string, string> = {};
	for (const [name, value] of Object.entries(source)) {
		if (value === undefined) continue;
		if (isAllowedByDefault(name) || extra.has(name)) env[name] = value;
	}
	for (const [name, value] of Object.entries(options.set ?? {})) {
		if (value === undefined) delete env[name];
		else env[name] = value;
	}
	return env;
}

/**
 * Node's flags for a pi child (--pi-node-options). Memory per live session bounds how many a machine
 * holds, and most of what an idle pi holds beyond its code is V8's young generation, which Node lets
 * grow to 16 MiB per semi-space: 2 MiB takes a fifth off pi's RSS after a long run at no measured
 * CPU or start-up cost. 1 MiB saves 4 % more for about 10 % more CPU and a slower start, and
 * --optimize-for-size 4 % more again for 1.2–1.4× the CPU per run (BENCHMARKS.md, "Cost of a
 * session"), so those are left to the operator.
 */
export const defaultPiNodeOptions = "--max-semi-space-size=2";

/** Why a --pi-node-options value is refused, or undefined: flags only, never a script or an inspector. */
export function nodeFlagsProblem(value: string): string | undefined {
	for (const flag of nodeFlags(value)) {
		if (!/^--[a-z0-9][\w-]*(=\S+)?$/i.test(flag))
			return `${JSON.stringify(flag)} is not a --flag or --flag=value: pi's script is the gateway's to name`;
		// An inspector port would let any local process (an agent's tool included) run code in pi.
		if (/^--(inspect|debug)/i.test(flag)) return `${flag}: an inspector is not allowed on pi children`;
	}
	return undefined;
}

/** The flags of a --pi-node-options value ("" or blanks: none, Node's defaults). */
export function nodeFlags(value: string): string[] {
	return value.split(/\s+/).filter(Boolean);
}
