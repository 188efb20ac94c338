import { execFile, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { className, eventTypes, generateEvents } from "../../clients/python/generate-events.ts";
import { generate } from "../../clients/python/generate-types.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// The first-party Python client (clients/python, standard library only): its typed schema and event
// classes are what the generator makes of openapi.yaml, every event type has its class, pip installs
// it without the network, and its own unittest program (clients/python/tests) passes against a live
// gateway with real pi. Debian's python3 where there is one (the system's, no PyPI), else PATH's.
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const pkg = join(repo, "clients/python");
const token = "client-py-test-token-0123456789";
const python = ["/usr/bin/python3", "python3"].find((candidate) => {
	try {
		execFileSync(candidate, ["-c", "import sys; assert sys.version_info >= (3, 9)"], { stdio: "ignore" });
		return true;
	} catch {
		return false;
	}
});
/**
 * How pip can build the package with no network: from a folder holding a setuptools wheel (build
 * isolation, no index), or with the system's own setuptools and wheel (Debian's python3-setuptools
 * and python3-wheel; --no-build-isolation in a venv that sees them).
 */
const wheels = [process.env.PI_GATEWAY_WHEELS, "/opt/pypi/files"].find(
	(dir) => dir && existsSync(dir) && readdirSync(dir).some((f) => /^setuptools-.*\.whl$/.test(f)),
);
const systemBuild = (() => {
	try {
		execFileSync(python ?? "python3", ["-c", "import pip, setuptools, wheel"], { stdio: "ignore" });
		return true;
	} catch {
		return false;
	}
})();
const installMode = wheels ? "wheels" : systemBuild ? "system" : undefined;

const spec = parse(readFileSync(join(repo, "openapi.yaml"), "utf8"));

it("schema.py and event_types.py are what `npm run clients:types` makes of openapi.yaml", () => {
	const schema = readFileSync(join(pkg, "src/pi_gateway/schema.py"), "utf8");
	expect(generate(spec) === schema, "run `npm run clients:types`").toBe(true);
	const events = readFileSync(join(pkg, "src/pi_gateway/event_types.py"), "utf8");
	expect(generateEvents(spec) === events, "run `npm run clients:types`").toBe(true);
});

it.skipIf(!python)("every event type of openapi.yaml has a class of its own in the Python client", () => {
	// Read from the spec apart from the generator: StreamEvent's discriminator and each oneOf member's `type`.
	const schemas = spec.components.schemas;
	const union = schemas.StreamEvent;
	const types = new Set<string>(Object.keys(union.discriminator.mapping));
	for (const member of union.oneOf)
		for (const t of schemas[member.$ref.split("/").pop()].properties.type.enum) types.add(t);
	expect(types.size).toBeGreaterThan(40);
	expect(
		eventTypes(spec)
			.map((e) => e.type)
			.sort(),
	).toEqual([...types].sort());
	const script = [
		"import json, sys",
		"from pi_gateway.events import EVENT_CLASSES, Event, parse_event",
		"out = {}",
		"for t in json.load(sys.stdin):",
		"    e = parse_event({'type': t}, 1)",
		"    c = EVENT_CLASSES.get(t, Event)",
		"    out[t] = [type(e).__name__, c is not Event and type(e) is c, c.TYPE == t]",
		"print(json.dumps(out))",
	].join("\n");
	const stdout = execFileSync(python as string, ["-c", script], {
		input: JSON.stringify([...types]),
		env: { ...process.env, PYTHONPATH: join(pkg, "src"), PYTHONDONTWRITEBYTECODE: "1" },
	});
	const classes = JSON.parse(stdout.toString()) as Record<string, [string, boolean, boolean]>;
	for (const type of types) {
		expect(classes[type], type).toEqual([className(type), true, true]);
	}
});

describe.skipIf(!python)("the Python client against a live gateway", () => {
	let gw: TestGateway;
	beforeAll(async () => {
		gw = await startTestGateway({ ...noPool, token });
	});
	afterAll(() => gw?.stop());

	it("its unittest programs pass, sync and asyncio (resume rules, early ends, the SSE parser split at every byte, and streams cut at every byte of a recorded stream on scripted servers; live: gate, streamed prompt, typed events and helpers, every event type of the served spec typed, cuts at chosen bytes and resume by POST with one prompt, wait mode, a cancelled wait or KeyboardInterrupt cancelling the run, request params, paged list, errors, abort, delete)", async () => {
		const result = await run(python as string, ["-m", "unittest", "discover", "-v", "-s", join(pkg, "tests")], {
			cwd: repo,
			env: {
				...process.env,
				PYTHONPATH: join(pkg, "src"),
				PYTHONDONTWRITEBYTECODE: "1",
				PI_GATEWAY_URL: gw.url,
				PI_GATEWAY_TOKEN: token,
				PI_GATEWAY_WORKSPACE: gw.workspace,
			},
			// 35 tests, sync and asyncio: the live ones against real pi take about a minute alone, the
			// every-byte cuts (some 17 000 short connections on loopback) half a minute; more on a busy machine.
			timeout: 420_000,
		}).catch((error) => error);
		expect(result.stderr, result.stdout).toMatch(/\nOK\n$/);
		expect(result.stderr).toMatch(/^Ran 35 tests/m);
	}, 450_000);

	it.skipIf(!installMode)(
		"pip installs it offline into a fresh venv (pip install ./clients/python)",
		async () => {
			const venv = mkdtempSync(join(tmpdir(), "pi-gateway-venv-"));
			try {
				const venvArgs = installMode === "wheels" ? [venv] : ["--system-site-packages", "--without-pip", venv];
				await run(python as string, ["-m", "venv", ...venvArgs], { timeout: 120_000 });
				const bin = join(venv, "bin");
				// pip builds in the source folder (build/, *.egg-info): a copy keeps the tree clean.
				const source = join(venv, "src-copy");
				cpSync(pkg, source, { recursive: true, filter: (path) => !/__pycache__|\.egg-info|\/build$/.test(path) });
				const how = installMode === "wheels" ? ["--find-links", wheels as string] : ["--no-build-isolation"];
				await run(join(bin, "python"), ["-m", "pip", "install", "-q", "--no-index", ...how, source], {
					cwd: tmpdir(),
					timeout: 120_000,
				});
				const { stdout } = await run(
					join(bin, "python"),
					["-c", "import pi_gateway, os; print(pi_gateway.PiGateway.__name__, os.path.dirname(pi_gateway.__file__))"],
					{ cwd: tmpdir() },
				);
				const site = stdout.trim().split(" ")[1] ?? "";
				expect(stdout).toMatch(/^PiGateway \S+\/site-packages\/pi_gateway\n$/);
				expect(site.startsWith(venv)).toBe(true);
				// Typed for mypy/pyright users: the PEP 561 marker and the generated schema ship too.
				expect(readdirSync(site)).toEqual(expect.arrayContaining(["py.typed", "schema.py", "client.py"]));
			} finally {
				// A venv still being written (its maker killed at a timeout on a busy machine) takes a retry.
				rmSync(venv, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
			}
		},
		300_000,
	);
});
