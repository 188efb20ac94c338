import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Service } from "kubernetes-models/v1/Service";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { finalStage, gatewayConfig, unknownGatewayEnv } from "../helpers/deploy.ts";
import { docBlocks, repo } from "../helpers/doc-blocks.ts";

// deploy/kubernetes, read as the API server and the gateway would, with no cluster (none runs on
// these machines; docs/deployment.md says so). Two checks against the Kubernetes API's own
// definitions of each kind (the npm package kubernetes-models): its ajv validators (types,
// required fields, enums, formats), and, since the API's schemas let unknown fields through where
// `kubectl apply` refuses them, TypeScript's excess-property check against the same package's
// types. A planted mistake fails each. Then the gateway's side: the port, the probes' paths, the
// settings (parsed by the gateway's own parser), the secrets' files and the drain budget.
const dir = join(repo, "deploy/kubernetes");
type Doc = { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> } & Record<
	string,
	unknown
>;
const docs: Doc[] = readdirSync(dir)
	.filter((f) => f.endsWith(".yaml"))
	.sort()
	.flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), "utf8")).map((d) => d.toJSON() as Doc));
const models = { StatefulSet, Service, PodDisruptionBudget } as const;
const types = {
	StatefulSet: ["IStatefulSet", "kubernetes-models/apps/v1/StatefulSet"],
	Service: ["IService", "kubernetes-models/v1/Service"],
	PodDisruptionBudget: ["IPodDisruptionBudget", "kubernetes-models/policy/v1/PodDisruptionBudget"],
} as const;
type Kind = keyof typeof models;

/** The ajv check: kubernetes-models' validate() throws on a value the API's schema refuses. */
function schemaProblem(doc: Doc): string | undefined {
	const Model = models[doc.kind as Kind];
	if (!Model) return `no model for ${doc.kind}`;
	try {
		new Model(doc as never).validate();
		return undefined;
	} catch (error) {
		return (error as Error).message;
	}
}

/** The unknown-field check: each document as a typed literal, TypeScript's diagnostics per document. */
function unknownFields(named: Record<string, Doc>): Record<string, string[]> {
	const file = join(repo, "test/unit/__deploy-kubernetes-check.ts");
	let text = Object.values(types)
		.map(([type, from]) => `import type { ${type} } from "${from}";\n`)
		.join("");
	const starts: [string, number][] = [];
	for (const [name, doc] of Object.entries(named)) {
		starts.push([name, text.split("\n").length - 1]);
		text += `export const ${name}: ${types[doc.kind as Kind][0]} = ${JSON.stringify(doc, null, 1)};\n`;
	}
	const options: ts.CompilerOptions = {
		strict: true,
		noEmit: true,
		skipLibCheck: true,
		module: ts.ModuleKind.NodeNext,
		moduleResolution: ts.ModuleResolutionKind.NodeNext,
		target: ts.ScriptTarget.ES2022,
		types: [],
	};
	const host = ts.createCompilerHost(options);
	const getSourceFile = host.getSourceFile;
	host.getSourceFile = (name, language, ...rest) =>
		name === file ? ts.createSourceFile(name, text, language) : getSourceFile(name, language, ...rest);
	const fileExists = host.fileExists;
	host.fileExists = (name) => name === file || fileExists(name);
	const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram([file], options, host));
	const out: Record<string, string[]> = Object.fromEntries(Object.keys(named).map((name) => [name, []]));
	const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022);
	for (const d of diagnostics) {
		const line = d.file && d.start !== undefined ? source.getLineAndCharacterOfPosition(d.start).line : -1;
		const owner = [...starts].reverse().find(([, start]) => line >= start)?.[0] ?? "(imports)";
		out[owner] = [...(out[owner] ?? []), ts.flattenDiagnosticMessageText(d.messageText, "\n")];
	}
	return out;
}

const statefulSet = docs.find((d) => d.kind === "StatefulSet") as Doc;
const podSpec = (statefulSet.spec.template as { spec: Record<string, unknown> }).spec;
type Container = Record<string, unknown> & {
	env: { name: string; value?: string; valueFrom?: Record<string, unknown> }[];
	ports: { name: string; containerPort: number }[];
};
const container = (podSpec.containers as Container[])[0] as Container;
const probe = (name: string) => container[name] as { httpGet: { path: string; port: string } };

/** The pod's env as the kubelet gives it: fieldRefs with sample values, $(NAME) expanded. */
function podEnv(): Record<string, string> {
	const sample: Record<string, string> = {
		"metadata.name": "pi-gateway-0",
		"metadata.namespace": "agents",
		"status.podIP": "10.1.2.3",
	};
	const env: Record<string, string> = {};
	for (const { name, value, valueFrom } of container.env) {
		const field = (valueFrom?.fieldRef as { fieldPath: string } | undefined)?.fieldPath;
		if (field) env[name] = sample[field] as string;
		else if (value !== undefined) env[name] = value.replace(/\$\(([A-Z_]+)\)/g, (_, n: string) => env[n] ?? "");
	}
	return env;
}

describe("deploy/kubernetes against the Kubernetes API's definitions", () => {
	const planted = structuredClone(statefulSet);
	const plantedContainer = (planted.spec.template as { spec: { containers: Container[] } }).spec.containers[0];
	(plantedContainer?.readinessProbe as { httpGet: Record<string, unknown> }).httpGet = {
		pth: "/readyz",
		port: "http",
	};
	const wrongType = structuredClone(statefulSet);
	const wrongContainer = (wrongType.spec.template as { spec: { containers: Container[] } }).spec.containers[0];
	(wrongContainer?.livenessProbe as Record<string, unknown>).periodSeconds = "10s";

	it("has the kinds it should: a StatefulSet, two Services and a PodDisruptionBudget", () => {
		expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
			"PodDisruptionBudget/pi-gateway",
			"Service/pi-gateway",
			"Service/pi-gateway-nodes",
			"StatefulSet/pi-gateway",
		]);
	});

	it("every document passes the API's schema, and a wrongly typed field does not", () => {
		for (const doc of docs) expect(schemaProblem(doc), `${doc.kind}/${doc.metadata.name}`).toBeUndefined();
		expect(schemaProblem(wrongType)).toMatch(/livenessProbe\/periodSeconds must be integer/);
	});

	it("no document has a field the API does not know, and a misspelt probe field is caught", () => {
		const named = Object.fromEntries(docs.map((doc, i) => [`doc${i}`, doc]));
		const found = unknownFields({ ...named, planted });
		expect(found.planted?.join("\n")).toMatch(/'"?pth"?' does not exist in type 'IHTTPGetAction'/);
		delete found.planted;
		expect(found).toEqual(Object.fromEntries(Object.keys(named).map((name) => [name, []])));
	}, 120_000);
});

describe("deploy/kubernetes agrees with the gateway", () => {
	it("the container port is the gateway's, and the probes ask /readyz and /healthz on it", () => {
		const { config } = gatewayConfig(podEnv());
		expect(container.ports).toEqual([{ name: "http", containerPort: config.port }]);
		expect(finalStage).toMatch(new RegExp(`^EXPOSE ${config.port}$`, "m"));
		expect(probe("readinessProbe").httpGet).toEqual({ path: "/readyz", port: "http" });
		expect(probe("livenessProbe").httpGet).toEqual({ path: "/healthz", port: "http" });
		for (const doc of docs.filter((d) => d.kind === "Service"))
			expect((doc.spec.ports as { targetPort: string }[])[0]?.targetPort).toBe("http");
	});

	it("every setting is one the gateway's parser knows and accepts; the probes' and peers' Host is allowed", () => {
		const env = podEnv();
		expect(unknownGatewayEnv(env)).toEqual([]);
		const { config, warnings } = gatewayConfig(env);
		expect(warnings).toEqual([]);
		expect(config.nodeName).toBe("pi-gateway-0");
		// The kubelet's probes and the other nodes send Host: <pod IP>:8787.
		expect(config.advertiseUrl).toBe("http://10.1.2.3:8787");
		expect(config.allowedHosts).toContain("10.1.2.3");
		expect(config.allowedHosts).toContain("pi-gateway");
	});

	it("secrets are files of a mounted Secret or secretKeyRefs, and docs/deployment.md makes that Secret", () => {
		const { config } = gatewayConfig(podEnv());
		const mount = (container.volumeMounts as { name: string; mountPath: string; readOnly?: boolean }[]).find(
			(m) => m.name === "secrets",
		);
		expect(mount?.readOnly).toBe(true);
		const volume = (podSpec.volumes as { name: string; secret?: { secretName: string } }[]).find(
			(v) => v.name === "secrets",
		);
		const keys = [config.databaseUrlFile, config.clusterSecretFile, config.tokenFile].map((file) => {
			expect(file?.startsWith(`${mount?.mountPath}/`)).toBe(true);
			return file?.slice(`${mount?.mountPath}/`.length);
		});
		expect(config.databaseUrl).toBeUndefined();
		expect(config.token).toBeUndefined();
		// The keys file: one for every node, from a Secret of its own that may not exist yet.
		const keysVolume = (
			podSpec.volumes as { name: string; secret?: { secretName: string; optional?: boolean } }[]
		).find((v) => v.name === "keys");
		expect(keysVolume?.secret).toMatchObject({ secretName: "pi-gateway-keys", optional: true });
		const keysMount = (container.volumeMounts as { name: string; mountPath: string }[]).find((m) => m.name === "keys");
		expect(config.keysFile).toBe(`${keysMount?.mountPath}/keys.json`);
		for (const { value } of container.env) expect(value ?? "").not.toMatch(/postgres:\/\//);
		const made = docBlocks("docs/deployment.md")
			.map((b) => b.code)
			.find((code) => code.includes(`kubectl create secret generic ${volume?.secret?.secretName} `));
		expect(made, "docs/deployment.md: kubectl create secret generic pi-gateway …").toBeDefined();
		for (const key of keys) expect(made).toContain(`--from-file=${key}=`);
		const refs = container.env.filter((e) => e.valueFrom?.secretKeyRef);
		expect(refs.map((e) => e.name)).toEqual(["ANTHROPIC_API_KEY"]);
	});

	it("a preStop wait and the drain fit in terminationGracePeriodSeconds", () => {
		const { config } = gatewayConfig(podEnv());
		const preStop = (container.lifecycle as { preStop: { exec: { command: string[] } } }).preStop.exec.command;
		expect(preStop[0]).toBe("sleep");
		const wait = Number(preStop[1]) * 1000;
		const budget = wait + config.drainTimeoutMs + 2 * config.shutdownGraceMs;
		expect((podSpec.terminationGracePeriodSeconds as number) * 1000).toBeGreaterThan(budget);
	});

	it("runs as the image's user with what bubblewrap needs, three replicas, one down at a time", () => {
		expect(finalStage).toMatch(/^USER 10001:10001$/m);
		expect(podSpec.securityContext).toMatchObject({
			runAsUser: 10001,
			runAsGroup: 10001,
			runAsNonRoot: true,
			seccompProfile: { type: "Unconfined" },
			appArmorProfile: { type: "Unconfined" },
		});
		expect(podSpec.hostUsers).toBe(false);
		expect(container.securityContext).toMatchObject({ procMount: "Unmasked", capabilities: { drop: ["ALL"] } });
		expect(statefulSet.spec.replicas).toBe(3);
		const pdb = docs.find((d) => d.kind === "PodDisruptionBudget") as Doc;
		expect(pdb.spec.maxUnavailable).toBe(1);
		const labels = (statefulSet.spec.selector as { matchLabels: object }).matchLabels;
		expect((pdb.spec.selector as { matchLabels: object }).matchLabels).toEqual(labels);
		for (const doc of docs.filter((d) => d.kind === "Service")) expect(doc.spec.selector).toEqual(labels);
	});
});
