import { describe, expect, it } from "vitest";
import { checkPassEnvName, childEnv, isAllowedByDefault } from "../../src/config/child-env.ts";
import { parseConfig } from "../../src/config/config.ts";

const gatewayEnv = {
	PATH: "/usr/bin",
	HOME: "/home/op",
	LANG: "C.UTF-8",
	LC_ALL: "C.UTF-8",
	https_proxy: "http://proxy:3128",
	NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
	ANTHROPIC_API_KEY: "sk-ant",
	OPENAI_API_KEY: "sk-oai",
	AWS_PROFILE: "bedrock",
	AWS_REGION: "eu-west-1",
	GEMINI_API_KEY: "g",
	GOOGLE_APPLICATION_CREDENTIALS: "/adc.json",
	PI_OFFLINE: "1",
	PI_CODING_AGENT_DIR: "/agent",
	PI_GATEWAY_TOKEN: "the-gateway-token-0123456789",
	PI_GATEWAY_TOKEN_FILE: "/secret/token",
	PI_GATEWAY_DATA_DIR: "/data",
	DATABASE_URL: "postgres://user:pw@db/x",
	GITHUB_TOKEN: "ghp_x",
	NODE_OPTIONS: "--require /evil.js",
	SSH_AUTH_SOCK: "/tmp/ssh.sock",
};

describe("childEnv", () => {
	it("passes what pi and its providers need, and nothing else", () => {
		expect(childEnv(gatewayEnv)).toEqual({
			PATH: "/usr/bin",
			HOME: "/home/op",
			LANG: "C.UTF-8",
			LC_ALL: "C.UTF-8",
			https_proxy: "http://proxy:3128",
			NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
			ANTHROPIC_API_KEY: "sk-ant",
			OPENAI_API_KEY: "sk-oai",
			AWS_PROFILE: "bedrock",
			AWS_REGION: "eu-west-1",
			GEMINI_API_KEY: "g",
			GOOGLE_APPLICATION_CREDENTIALS: "/adc.json",
			PI_OFFLINE: "1",
			PI_CODING_AGENT_DIR: "/agent",
		});
	});

	it("never passes the gateway's own variables, not even when asked for by name", () => {
		const env = childEnv(gatewayEnv, { passEnv: ["PI_GATEWAY_TOKEN", "GITHUB_TOKEN"] });
		expect(Object.keys(env).filter((k) => k.startsWith("PI_GATEWAY_"))).toEqual([]);
		expect(env.GITHUB_TOKEN).toBe("ghp_x");
		expect(isAllowedByDefault("PI_GATEWAY_TOKEN")).toBe(false);
		expect(checkPassEnvName("PI_GATEWAY_TOKEN")).toMatch(/never reach pi/);
		expect(checkPassEnvName("A=B")).toMatch(/not a variable name/);
		expect(checkPassEnvName("GITHUB_TOKEN")).toBeUndefined();
		expect(() => parseConfig({ passEnv: ["PI_GATEWAY_TOKEN"] })).toThrow("--pass-env: PI_GATEWAY_TOKEN");
		expect(parseConfig({ passEnv: ["GITHUB_TOKEN"] }).passEnv).toEqual(["GITHUB_TOKEN"]);
	});

	it("sets and removes on top", () => {
		const env = childEnv(gatewayEnv, { set: { PI_OFFLINE: undefined, PI_CODING_AGENT_DIR: "/other" } });
		expect(env.PI_OFFLINE).toBeUndefined();
		expect(env.PI_CODING_AGENT_DIR).toBe("/other");
	});
});
