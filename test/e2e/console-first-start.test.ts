import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";

// README's `npm start` on a fresh clone, where dist/ is not there (nothing built is committed): a
// copy of this tree's files without dist/, its node_modules linked in, started with `npm start`
// in README's layout (HOME = a temporary folder). With vite installed the console is built before
// the gateway starts and served; without it (an install with --omit=dev) the gateway starts anyway
// and /console/ is a page that says how to build it, never the JSON 404 `console_not_built`.
const repo = resolve(import.meta.dirname, "../..");
const roots: string[] = [];
const children: ChildProcess[] = [];

afterAll(() => {
	for (const child of children) if (child.exitCode === null && child.pid) process.kill(-child.pid, "SIGKILL");
	for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** The repository's files (tracked and new, not ignored: no dist/, no node_modules) copied to a new folder. */
function freshClone(modules: (clone: string) => void): string {
	const root = mkdtempSync(join(tmpdir(), "pi-gateway-clone-"));
	roots.push(root);
	const clone = join(root, "clone");
	const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: repo, encoding: "utf8" })
		.split("\0")
		.filter((f) => f && !f.startsWith("test/") && !f.startsWith("bench/") && existsSync(join(repo, f)));
	for (const file of files) {
		mkdirSync(dirname(join(clone, file)), { recursive: true });
		cpSync(join(repo, file), join(clone, file));
	}
	expect(existsSync(join(clone, "dist"))).toBe(false);
	modules(clone);
	mkdirSync(join(root, "home"));
	return root;
}

/** `npm start` in the clone, README's layout, on a free loopback port; resolves with its URL once it listens. */
async function npmStart(root: string): Promise<{ url: string; stderr: () => string; child: ChildProcess }> {
	const child = spawn("bash", ["-c", "npm start -- --host=127.0.0.1 --port=0 --log-level=info --warm-pool 0"], {
		cwd: join(root, "clone"),
		env: { ...process.env, HOME: join(root, "home"), PI_GATEWAY_TOKEN: "first-start-token-0123456789" },
		stdio: ["ignore", "pipe", "pipe"],
		detached: true,
	});
	children.push(child);
	let stderr = "";
	child.stderr?.setEncoding("utf8").on("data", (t: string) => {
		stderr += t;
	});
	const url = await new Promise<string>((done, fail) => {
		createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
			try {
				const entry = JSON.parse(line) as { msg?: string; url?: string };
				if (entry.msg === "pi-gateway listening") done(String(entry.url));
			} catch {}
		});
		child.once("exit", (code) => fail(new Error(`npm start exited (${code}): ${stderr}`)));
	});
	return { url, stderr: () => stderr, child };
}

async function stop(child: ChildProcess) {
	const exited = new Promise((done) => child.once("exit", done));
	if (child.pid) process.kill(-child.pid, "SIGTERM");
	await exited;
}

describe("README's npm start on a fresh clone (no dist/)", () => {
	it("builds the console before the gateway starts when vite is installed, then serves it", async () => {
		const root = freshClone((clone) => symlinkSync(join(repo, "node_modules"), join(clone, "node_modules")));
		const gw = await npmStart(root);
		try {
			expect(gw.stderr()).toContain("building the console");
			const page = await fetch(`${gw.url}/console/`, { headers: { accept: "text/html" } });
			expect(page.status).toBe(200);
			const html = await page.text();
			const script = /src="\.\/(console\.js\?v=[\w-]+)"/.exec(html)?.[1];
			expect(script, html).toBeTruthy();
			const js = await fetch(`${gw.url}/console/${script}`);
			expect(js.status).toBe(200);
			expect(js.headers.get("content-type")).toContain("javascript");
			expect(existsSync(join(root, "clone/dist/console/console.js.br"))).toBe(true);
		} finally {
			await stop(gw.child);
		}
	}, 240_000);

	it("without vite (--omit=dev) starts anyway, and /console/ says how to build the console", async () => {
		const root = freshClone((clone) => {
			// node_modules as an install without the dev dependency vite would have it.
			const modules = join(clone, "node_modules");
			mkdirSync(modules);
			for (const name of readdirSync(join(repo, "node_modules")))
				if (name !== "vite" && name !== ".bin") symlinkSync(join(repo, "node_modules", name), join(modules, name));
		});
		const gw = await npmStart(root);
		try {
			expect(gw.stderr()).toContain("vite is not installed");
			const page = await fetch(`${gw.url}/console/`, { headers: { accept: "text/html,*/*" } });
			expect(page.status).toBe(503);
			expect(page.headers.get("content-type")).toContain("text/html");
			expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
			const text = await page.text();
			expect(text).toContain("The console is not built");
			expect(text).toContain("bash scripts/build-console.sh");
			expect(text).not.toContain("console_not_built");
			// The API is there all the same.
			expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
		} finally {
			await stop(gw.child);
		}
	}, 240_000);
});
