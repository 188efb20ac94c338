import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { etcShown } from "../../src/sessions/process/sandbox-view.ts";
import { cannotRunAsNobody, type GatewayAsNobody, startGatewayAsNobody } from "../helpers/gateway-as-user.ts";
import { type GatewayProcess, killAll, launchGateway } from "../helpers/gateway-process.ts";
import { hasCommand } from "../helpers/host.ts";

// Issue 42 item 4: the sandbox shows an allowlist, not the host. On the old view (`--ro-bind / /`
// with a few hides) an agent run as root read /etc/shadow, listed /root, and read a config file
// holding the gateway's token from a folder outside /tmp. Here the agent walks what it can see and
// reads what it knows of; anything outside the list fails the test. Planted files lie outside
// /tmp (which was always hidden): /var/tmp, /srv, /root and the gateway's HOME.
const asRoot = process.getuid?.() === 0;
const planted = mkdtempSync("/var/tmp/pi-gateway-view-");
const tag = relative("/var/tmp", planted);
const secrets = {
	var: "planted-var-tmp-secret-51c7e2",
	srv: "planted-srv-secret-0a9b33",
	rootHome: "planted-root-home-secret-7d21f0",
	home: "planted-gateway-home-ssh-key-e4c8aa",
	token: "config-file-token-view-0123456789abcdef",
	operatorKey: "sk-operator-models-json-view-9c1d",
};
const srvDir = join("/srv", tag);
const rootFile = join("/root", `${tag}.txt`);

beforeAll(() => {
	writeFileSync(join(planted, "secret.txt"), secrets.var, { mode: 0o644 });
	if (asRoot) {
		mkdirSync(srvDir, { recursive: true });
		writeFileSync(join(srvDir, "secret.txt"), secrets.srv, { mode: 0o644 });
		writeFileSync(rootFile, secrets.rootHome);
	}
});
afterAll(() => {
	rmSync(planted, { recursive: true, force: true });
	rmSync(srvDir, { recursive: true, force: true });
	rmSync(rootFile, { force: true });
});

/** What the agent runs: its view to depth 2 (the system's folders aside), /etc, /root, and reads of what it knows. */
const walk = (known: string[]) =>
	[
		"find / -maxdepth 2 -not -path '/proc/*' -not -path '/dev/*' -not -path '/usr/*' -not -path '/etc/*' 2>/dev/null | sort",
		"echo '#etc'; ls -A /etc",
		"echo '#root'; ls -A /root 2>&1",
		`echo '#reads'; for f in /etc/shadow /etc/gshadow ${known.join(" ")}; do cat "$f" 2>&1; done; echo '#end'`,
	].join("; ");

/** The entries the walk may list: the system's, and the folders on the way to what the session is given. */
function outside(listing: string, given: string[]): string[] {
	const roots = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/tmp"];
	const within = (outer: string, inner: string) => inner === outer || inner.startsWith(`${outer}/`);
	return listing
		.split("\n")
		.filter((line) => line.startsWith("/"))
		.filter((entry) => !roots.some((r) => within(r, entry)) && entry !== "/")
		.filter((entry) => !given.some((g) => within(entry, g) || within(g, entry)));
}

const etcAllowed = (name: string) =>
	etcShown.some((e) => e === name || e.startsWith(`${name}/`)) || /^python3(\.\d+)?$/.test(name);

const section = (text: string, name: string) => text.split(`#${name}\n`)[1]?.split("\n#")[0] ?? "";

/** The checks both runs share: nothing listed beyond the allowlist, nothing planted read, no secret. */
function expectOnlyTheList(output: string, given: string[], leaked: string[]) {
	expect(outside(output.split("#etc")[0] ?? "", given)).toEqual([]);
	expect(
		section(output, "etc")
			.split("\n")
			.filter((n) => n && !etcAllowed(n)),
	).toEqual([]);
	expect(section(output, "reads")).toMatch(/\/etc\/shadow: No such file or directory/);
	for (const secret of leaked) expect(output).not.toContain(secret);
	expect(output).toContain("#end");
}

/** The tools people expect, with a writable HOME and TMPDIR. */
const toolsScript = [
	'cd "$(mktemp -d)"',
	"git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m one && echo git=$(git rev-list --count HEAD) && cd ..",
	"python3 -c 'print(\"python3=\" + str(6 * 7))'",
	"node -e 'console.log(\"node=\" + (1 + 1))'",
	"if [ -x /usr/bin/node ]; then /usr/bin/node -e 'console.log(\"usrnode=ok\")'; else echo usrnode=ok; fi",
	"if command -v cc >/dev/null; then printf 'int main(void){return 0;}' > m.c && cc m.c -o m && ./m && echo cc=ok; else echo cc=ok; fi",
	"if command -v rg >/dev/null; then echo needle > f && rg -q needle f && echo rg=ok; else echo rg=ok; fi",
	"if command -v npm >/dev/null; then npm --version >/dev/null 2>&1 && echo npm=ok; else echo npm=ok; fi",
	'touch "$HOME/.dotfile" && echo home=ok',
	'touch "$TMPDIR/t" && echo tmp=ok',
].join("; ");
const toolsOk = ["git=1", "python3=42", "node=2", "usrnode=ok", "cc=ok", "rg=ok", "npm=ok", "home=ok", "tmp=ok"];

describe.runIf(hasCommand("bwrap"))("what a sandboxed agent can read (gateway run as this user)", () => {
	const dir = mkdtempSync("/var/tmp/pi-gateway-view-gw-");
	const home = join(dir, "home");
	const config = join(dir, "config.yaml");
	let gw: GatewayProcess;
	let id: string;
	beforeAll(async () => {
		mkdirSync(join(home, ".ssh"), { recursive: true });
		writeFileSync(join(home, ".ssh", "id_ed25519"), secrets.home);
		// The operator's own pi (README's layout: ~/.pi/agent), its models.json holding a key.
		mkdirSync(join(home, ".pi", "agent"), { recursive: true });
		const m = { id: "m", name: "m", api: "openai-completions", contextWindow: 128_000, maxTokens: 1024 };
		const providers = { p: { baseUrl: "http://127.0.0.1:9/v1", apiKey: secrets.operatorKey, models: [m] } };
		writeFileSync(join(home, ".pi", "agent", "models.json"), JSON.stringify({ providers }));
		writeFileSync(config, `token: ${secrets.token}\n`, { mode: 0o600 });
		// README's npm start (HOME = `home`, the data dir in it) plus an operator's --config.
		gw = await launchGateway({
			root: home,
			port: 0,
			readme: true,
			extra: ["--config", config],
			clientToken: secrets.token,
		});
		const created = await gw.api("/v1/sessions", { method: "POST", json: {} });
		expect(created.status).toBe(201);
		id = created.body.id;
	}, 60_000);
	afterAll(async () => {
		if (gw) {
			killAll([gw]);
			await gw.exited;
		}
		rmSync(dir, { recursive: true, force: true });
	});

	it(`lists nothing outside the allowlist and reads no planted file${asRoot ? " (as root)" : ""}`, async () => {
		const cwd = (await gw.api(`/v1/sessions/${id}`)).body.cwd as string;
		const known = [
			join(planted, "secret.txt"),
			join(srvDir, "secret.txt"),
			rootFile,
			join(home, ".ssh", "id_ed25519"),
			config,
		];
		const run = await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: walk(known) } });
		expect(run.status).toBe(200);
		const output = run.body.output as string;
		const repo = resolve(import.meta.dirname, "../..");
		// What the session is given: its folder, pi's folders in the data dir, HOME (empty), pi and node.
		const given = [
			cwd,
			join(home, ".pi-gateway"),
			home,
			realpathSync(process.execPath),
			repo,
			realpathSync(join(repo, "node_modules")),
		];
		expectOnlyTheList(output, given, Object.values(secrets));
		// /root shows at most the folders on the way to what is put back (the sealed node's cache).
		for (const name of section(output, "root").split("\n").filter(Boolean))
			expect(
				given.some((g) => g.startsWith(join("/root", name))),
				`/root/${name}`,
			).toBe(true);
		// HOME is empty but for what is put back: not the operator's .ssh.
		const ls = await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: `ls -A ${home}` } });
		expect(ls.body.output).not.toContain(".ssh");
	});

	it("runs the tools people expect: git, python3, node, a C compiler, rg, npm; HOME and TMPDIR writable", async () => {
		const run = await gw.api(`/v1/sessions/${id}/bash`, { method: "POST", json: { command: toolsScript } });
		expect(run.status).toBe(200);
		expect((run.body.output as string).split("\n").filter((l: string) => /^\w+=/.test(l))).toEqual(toolsOk);
		expect(existsSync(join(home, ".dotfile"))).toBe(false);
	});

	it("shows a path an admin's session adds read-only; refuses a principal's outside its area and the data dir", async () => {
		const data = join(home, ".pi-gateway");
		const alice = createKey(join(data, "keys.json"), "alice", ["sessions:read", "sessions:write"]).secret;
		const added = await gw.api("/v1/sessions", { method: "POST", json: { sandboxReadable: [planted] } });
		expect(added.status).toBe(201);
		const read = await gw.api(`/v1/sessions/${added.body.id}/bash`, {
			method: "POST",
			json: { command: `cat ${join(planted, "secret.txt")}; echo x > ${join(planted, "w")} 2>&1 || echo read-only` },
		});
		expect(read.body.output).toContain(secrets.var);
		expect(read.body.output).toContain("read-only");
		const refused = await gw.api("/v1/sessions", { method: "POST", json: { sandboxReadable: [data] } });
		expect([refused.status, refused.body.code]).toEqual([403, "path_not_allowed"]);
		// The operator's pi agent dir, by a folder that holds it or a file in it (an attacker's review:
		// an admin's `["$HOME/.pi"]` was 201, and the agent read the real models.json and auth.json).
		for (const path of [join(home, ".pi"), join(home, ".pi", "agent", "models.json")]) {
			const agentDir = await gw.api("/v1/sessions", { method: "POST", json: { sandboxReadable: [path] } });
			expect([agentDir.status, agentDir.body.code]).toEqual([403, "path_not_allowed"]);
			expect(agentDir.body.detail).toContain("pi agent dir");
		}
		const missing = await gw.api("/v1/sessions", {
			method: "POST",
			json: { sandboxReadable: [join(planted, "none")] },
		});
		expect([missing.status, missing.body.code]).toEqual([400, "path_not_found"]);
		const asAlice = await fetch(`${gw.url}/v1/sessions`, {
			method: "POST",
			headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" },
			body: JSON.stringify({ sandboxReadable: [planted] }),
		});
		expect(asAlice.status).toBe(403);
		expect(((await asAlice.json()) as { code: string }).code).toBe("path_not_allowed");
	});
});

const whyNot = cannotRunAsNobody();
describe.skipIf(whyNot)(
	`what a sandboxed agent can read, gateway run as nobody${whyNot ? ` (skipped: ${whyNot})` : ""}`,
	() => {
		let nobody: GatewayAsNobody;
		beforeAll(async () => {
			nobody = await startGatewayAsNobody("default");
		}, 60_000);
		afterAll(() => nobody?.stop());

		it("lists nothing outside the allowlist and reads no planted file, though nobody may read them on the host", async () => {
			const created = await nobody.api("/v1/sessions", { method: "POST", json: {} });
			expect(created.status).toBe(201);
			const cwd = created.body.cwd as string;
			const known = [join(planted, "secret.txt"), join(srvDir, "secret.txt"), nobody.tokenFile];
			const run = await nobody.api(`/v1/sessions/${created.body.id}/bash`, {
				method: "POST",
				json: { command: walk(known) },
			});
			expect(run.status).toBe(200);
			const repo = resolve(import.meta.dirname, "../..");
			const given = [
				cwd,
				nobody.dataDir,
				nobody.root,
				dirname(nobody.node),
				repo,
				realpathSync(join(repo, "node_modules")),
			];
			expectOnlyTheList(run.body.output as string, given, [secrets.var, secrets.srv, nobody.token]);
			const tools = await nobody.api(`/v1/sessions/${created.body.id}/bash`, {
				method: "POST",
				json: { command: toolsScript },
			});
			expect((tools.body.output as string).split("\n").filter((l: string) => /^\w+=/.test(l))).toEqual(toolsOk);
		});
	},
);
