import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Config, parseConfig } from "../../src/config/config.ts";
import { envName, settingKeys } from "../../src/config/names.ts";
import { readSettings } from "../../src/config/sources.ts";
import { repo } from "./doc-blocks.ts";

// What the deploy recipes (deploy/compose, deploy/kubernetes) give the gateway, read by the
// gateway's own settings parser: the image's ENV, then the recipe's environment on top.

const containerfile = readFileSync(join(repo, "deploy/container/Containerfile"), "utf8");

/** The Containerfile's stages, each from its FROM line on. */
export const stages = containerfile.split(/^FROM /m).slice(1);
export const finalStage = stages.at(-1) ?? "";

/** The ENV the final stage sets (`ENV A=1 \` continued over lines). */
export function imageEnv(): Record<string, string> {
	const block = /^ENV ((?:.*\\\n)*.*)$/m.exec(finalStage)?.[1] ?? "";
	const env: Record<string, string> = {};
	for (const pair of block.replace(/\\\n/g, " ").trim().split(/\s+/)) {
		const [name, ...value] = pair.split("=");
		env[name as string] = value.join("=");
	}
	return env;
}

/** PI_GATEWAY_* names that are neither a setting's env var nor one the gateway reads elsewhere. */
export function unknownGatewayEnv(env: Record<string, string>): string[] {
	const known = new Set([...settingKeys.map(envName), "PI_GATEWAY_CONFIG"]);
	return Object.keys(env).filter((name) => name.startsWith("PI_GATEWAY_") && !known.has(name));
}

/** The gateway's configuration from the image's ENV plus `env`, as `pi-gateway` would parse it at start. */
export function gatewayConfig(env: Record<string, string>): { config: Config; warnings: string[] } {
	const command = readSettings([], { ...imageEnv(), ...env });
	if (command.kind !== "start") throw new Error(`not a start: ${command.kind}`);
	return { config: parseConfig(command.settings.input), warnings: command.settings.warnings };
}

/** Compose's `${NAME:-default}` and `${NAME}` with their defaults (what an empty environment gives). */
export function composeDefaults(text: string): string {
	return text.replace(/\$\{[A-Z_][A-Z0-9_]*(?::?-([^}]*))?\}/g, (_, fallback: string | undefined) => fallback ?? "");
}
