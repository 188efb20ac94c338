import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigSchema, parseConfig } from "../../src/config/config.ts";
import { sections } from "../../src/config/help.ts";
import { closest, kebab } from "../../src/config/names.ts";
import { explainConfigError, readSettings, type Settings } from "../../src/config/sources.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-gateway-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const settings = (argv: string[], env: NodeJS.ProcessEnv = {}): Settings => {
	const command = readSettings(argv, env);
	if (command.kind !== "start") throw new Error(command.kind);
	return command.settings;
};

describe("--help's sections", () => {
	it("list every setting of the schema exactly once (none falls into Other)", () => {
		const listed = sections.flatMap((section) => section.keys);
		expect([...listed].sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
		expect(new Set(listed).size).toBe(listed.length);
	});
});

describe("where a setting comes from", () => {
	const file = join(dir, "config.yaml");
	writeFileSync(
		file,
		"port: 9001\nmax-queued: 9\nmax-sessions: 7\nsandbox-writable: [/a, /b]\npi-command: node pi.js\nextensions:\n  mine: ./mine.ts\n",
	);

	it("flag over env over file over default, each value's source kept", () => {
		const {
			input,
			sources,
			file: read,
		} = settings(["--config", file, "--port", "9003"], {
			PI_GATEWAY_PORT: "9002",
			PI_GATEWAY_MAX_QUEUED: "5",
		});
		expect(read).toEqual({ path: file, read: true });
		expect(input).toMatchObject({
			port: "9003",
			maxQueued: "5",
			maxSessions: 7,
			sandboxWritable: ["/a", "/b"],
			piCommand: ["node", "pi.js"],
			extensions: { mine: join(dir, "mine.ts") },
		});
		expect(sources.get("port")).toMatchObject({ from: "flag", name: "--port" });
		expect(sources.get("maxQueued")).toMatchObject({ from: "env", name: "PI_GATEWAY_MAX_QUEUED" });
		expect(sources.get("maxSessions")).toMatchObject({ from: "file", name: "max-sessions", path: file });
		expect(sources.get("host")).toEqual({ from: "default" });
		expect(parseConfig({ ...input, dataDir: join(dir, "data") }).port).toBe(9003);
	});

	it("a relative path in the file is taken from the file's folder (a flag's from the current one); a source with a scheme is left alone", () => {
		const etc = join(dir, "etc");
		mkdirSync(etc);
		const named = join(etc, "gw.yaml");
		writeFileSync(
			named,
			"data-dir: ../state\nsandbox-writable: [cache]\nextensions:\n  mine: mine.ts\n  mcp: builtin:mcp\n",
		);
		const { input } = settings(["--config", named, "--keys-file", "keys.json"]);
		expect(input).toMatchObject({
			dataDir: join(dir, "state"),
			sandboxWritable: [join(etc, "cache")],
			extensions: { mine: join(etc, "mine.ts"), mcp: "builtin:mcp" },
			keysFile: "keys.json",
		});
	});

	it("the file's default place is <data-dir>/config.yaml, the data dir from flag or env; none there is no error", () => {
		const data = join(dir, "data-here");
		const none = settings(["--data-dir", data]);
		expect(none.file).toEqual({ path: join(data, "config.yaml"), read: false });
		const named = settings([], { PI_GATEWAY_CONFIG: file, PI_GATEWAY_DATA_DIR: data });
		expect(named.file.read).toBe(true);
	});

	it("an env switch takes true/false/1/0/yes/no/on/off and refuses anything else by name", () => {
		expect(settings([], { PI_GATEWAY_AUTO_RESUME: "off" }).input.autoResume).toBe(false);
		expect(settings([], { PI_GATEWAY_AUTO_RESUME: "1" }).input.autoResume).toBe(true);
		expect(() => settings([], { PI_GATEWAY_AUTO_RESUME: "maybe" })).toThrow(
			'PI_GATEWAY_AUTO_RESUME="maybe": "maybe" is not true or false.',
		);
	});

	it("a name in the file that is no setting is refused with the closest one, in the file's own spelling", () => {
		const typo = join(dir, "typo.yaml");
		writeFileSync(typo, "maxSessions: 3\n");
		expect(() => settings(["--config", typo])).toThrow('unknown setting "maxSessions"; did you mean max-sessions?');
	});
});

describe("a refused value", () => {
	const refusal = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
		const { input, sources } = settings(argv, env);
		const parsed = ConfigSchema.safeParse(input);
		if (parsed.success) throw new Error("accepted");
		return explainConfigError(parsed.error, sources);
	};

	it("names where it came from, what the setting takes and the --help section", () => {
		expect(refusal(["--port", "abc"])).toBe(
			'--port "abc": not a number. Port to listen on (0 picks a free one): a whole number from 0 to 65535, default 8787 (pi-gateway --help, section Server)',
		);
		expect(refusal([], { PI_GATEWAY_MAX_LIVE_SESSIONS: "0" })).toMatch(
			/^PI_GATEWAY_MAX_LIVE_SESSIONS="0": less than 1\. .*: a whole number, at least 1, default 32 \(pi-gateway --help, section Sessions\)$/,
		);
	});

	it("never shows a secret: a token is masked, a database URL loses its password", () => {
		const token = refusal(["--token", "short-secret"]);
		expect(token).toContain('--token "***": shorter than 16 characters');
		expect(token).not.toContain("short-secret");
		const url = refusal([], { PI_GATEWAY_DATABASE_URL: "mysql://user:hunter2@db/x" });
		expect(url).toContain('PI_GATEWAY_DATABASE_URL="mysql://user:***@db/x"');
		expect(url).not.toContain("hunter2");
	});
});

describe("a misspelt env var", () => {
	it("is said at start with the setting it resembles; other PI_GATEWAY_* names and strangers are left alone", () => {
		const { warnings, input } = settings([], {
			PI_GATEWAY_PROT: "9000",
			PI_GATEWAY_MAX_SESION: "3",
			PI_GATEWAY_URL: "http://x",
			PI_GATEWAY_SOMETHING_ELSE: "1",
		});
		expect(warnings).toEqual([
			"pi-gateway: WARNING: PI_GATEWAY_PROT is no setting and is ignored; did you mean PI_GATEWAY_PORT?",
			"pi-gateway: WARNING: PI_GATEWAY_MAX_SESION is no setting and is ignored; did you mean PI_GATEWAY_MAX_SESSIONS?",
		]);
		expect(input.port).toBeUndefined();
	});
});

describe("did you mean", () => {
	it("finds a typo or a prefix, and nothing for a stranger", () => {
		const flags = Object.keys(ConfigSchema.shape).map(kebab);
		expect(closest("prot", flags)).toBe("port");
		expect(closest("workspace-retention", flags)).toBe("workspace-retention-days");
		expect(closest("banana", flags)).toBeUndefined();
	});
});
