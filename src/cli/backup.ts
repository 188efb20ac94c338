/**
 * `pi-gateway backup FILE` and `pi-gateway restore FILE`: one archive (a tar of gzipped tars) of everything a
 * node keeps — the data dir (gateway.db, pi's session files, the per-principal agent dirs, the
 * shadow repositories that answer "what changed", keys, the admin token) and, when the workspace
 * root lies elsewhere, that root too — so that a wiped node comes back with its conversations and
 * their folders.
 *
 * The gateway must be stopped: gateway.db is held with an exclusive lock while it runs, and a copy
 * of files being written would not be one moment's state. The check is that lock itself (a running
 * gateway on the data dir makes this refuse, whatever its pid or host), taken by the backup and held
 * while it copies (src/store/sqlite/backup.ts), so no gateway starts on the folder meanwhile. Cluster
 * mode keeps its registry in PostgreSQL: back that up with pg_dump (docs/deployment.md).
 */
import { execFileSync } from "node:child_process";
import {
	closeSync,
	constants,
	existsSync,
	fchmodSync,
	mkdirSync,
	mkdtempSync,
	openSync,
	readdirSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { readSettings } from "../config/sources.ts";
import { copyWhileHeld } from "../store/sqlite/backup.ts";

const manifestName = "pi-gateway-backup.json";

export const backupUsage = `Usage:
  pi-gateway backup FILE  [--data-dir DIR] [--workspace-root DIR] [--config FILE]
  pi-gateway restore FILE [--data-dir DIR] [--workspace-root DIR] [--config FILE]

Stop the gateway first (systemctl stop pi-gateway): the archive is one moment's state of the data
dir and, when it lies elsewhere, the workspace root, found as the gateway finds them (flag, env,
config file, default ~/.pi-gateway).
restore needs an empty or missing data dir (and workspace root); it refuses to mix two states.`;

interface Manifest {
	format: 1;
	createdAt: string;
	/** Where the workspace root was, relative to the data dir when inside it; else absolute. */
	workspaceRoot: { inDataDir: string } | { outside: string } | null;
}

interface Places {
	dataDir: string;
	workspaceRoot?: string;
}

function places(argv: string[]): { file: string } & Places {
	const { values, positionals } = parseArgs({
		args: argv,
		allowPositionals: true,
		options: {
			"data-dir": { type: "string" },
			"workspace-root": { type: "string" },
			config: { type: "string" },
			help: { type: "boolean", short: "h" },
		},
		strict: true,
	});
	if (values.help) {
		console.log(backupUsage);
		process.exit(0);
	}
	if (positionals.length !== 1)
		throw new Error(
			`${positionals.length === 0 ? "the archive FILE is missing" : `one FILE, not ${positionals.length}`}\n\n${backupUsage}`,
		);
	// The gateway's own resolution (flag > env > config file > default), as `keys` uses: the backup
	// is of the folders that gateway uses, however they were named.
	const settings = readSettings(
		[
			...(values["data-dir"] ? ["--data-dir", values["data-dir"]] : []),
			...(values["workspace-root"] ? ["--workspace-root", values["workspace-root"]] : []),
			...(values.config ? ["--config", values.config] : []),
		],
		process.env,
	);
	const input = settings.kind === "start" ? settings.settings.input : {};
	const dataDir = resolve(input.dataDir ?? join(homedir(), ".pi-gateway"));
	const root = input.workspaceRoot;
	return {
		file: resolve(positionals[0] as string),
		dataDir,
		workspaceRoot: root === undefined ? undefined : resolve(root),
	};
}

function tar(args: string[]): void {
	execFileSync("tar", args, { stdio: ["ignore", "ignore", "pipe"] });
}

export function backupCommand(argv: string[]): void {
	const { file, dataDir, workspaceRoot } = places(argv);
	if (!existsSync(join(dataDir, "gateway.db")))
		throw new Error(`${dataDir} holds no gateway.db: not a pi-gateway data dir (--data-dir DIR names it)`);
	const inside = workspaceRoot === undefined ? undefined : relative(dataDir, workspaceRoot);
	const outside =
		workspaceRoot !== undefined && (inside === undefined || inside.startsWith("..")) ? workspaceRoot : undefined;
	const manifest: Manifest = {
		format: 1,
		createdAt: new Date().toISOString(),
		workspaceRoot: outside ? { outside } : inside !== undefined ? { inDataDir: inside } : null,
	};
	if (copyWhileHeld(dataDir, () => writeArchive(file, dataDir, outside, manifest)) === "in use")
		throw new Error(
			`a gateway is running on ${dataDir} (${join(dataDir, "gateway.db")} is locked); stop it first (e.g. systemctl stop pi-gateway), then back up`,
		);
	console.error(
		`pi-gateway: backed up ${dataDir}${outside ? ` and ${outside}` : ""} to ${file}; restore with: pi-gateway restore ${file}`,
	);
}

/** The archive: the manifest, the data dir and (when it lies elsewhere) the workspace root, each a gzipped tar. */
function writeArchive(file: string, dataDir: string, outside: string | undefined, manifest: Manifest): void {
	const staging = mkdtempSync(join(tmpdir(), "pi-gateway-backup-"));
	try {
		writeFileSync(join(staging, manifestName), `${JSON.stringify(manifest, null, 2)}\n`);
		// One inner archive per tree, so neither's names can collide with the other's. Links are
		// stored as links (never followed): a workspace may hold any link the agent made.
		// Node's compile cache for sandboxed pi (areas.ts) is rebuilt by the next pi start: not kept.
		tar(["-czf", join(staging, "data.tar.gz"), "--exclude=./compile-cache", "-C", dataDir, "."]);
		if (outside) tar(["-czf", join(staging, "workspace.tar.gz"), "-C", outside, "."]);
		// Only its owner may read it (it holds the token, keys.json and gateway.db): written through a
		// descriptor made 0600 before any byte, whatever the file was before.
		// Never through a link at FILE (it would land where the link points, perhaps a folder others read).
		const { O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW } = constants;
		const out = openSync(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o600);
		try {
			fchmodSync(out, 0o600);
			execFileSync(
				"tar",
				["-cf", "-", "-C", staging, manifestName, "data.tar.gz", ...(outside ? ["workspace.tar.gz"] : [])],
				{
					stdio: ["ignore", out, "pipe"],
				},
			);
		} finally {
			closeSync(out);
		}
	} finally {
		rmSync(staging, { recursive: true, force: true });
	}
}

function emptyOrMissing(dir: string): boolean {
	return !existsSync(dir) || readdirSync(dir).length === 0;
}

export function restoreCommand(argv: string[]): void {
	const { file, dataDir, workspaceRoot } = places(argv);
	if (!existsSync(file)) throw new Error(`no archive at ${file}`);
	const staging = mkdtempSync(join(tmpdir(), "pi-gateway-restore-"));
	try {
		tar(["-xf", file, "-C", staging]);
		const manifest = JSON.parse(readFileSync(join(staging, manifestName), "utf8")) as Manifest;
		if (manifest.format !== 1)
			throw new Error(`${file}: backup format ${manifest.format} is not one this version reads`);
		const outside =
			manifest.workspaceRoot && "outside" in manifest.workspaceRoot ? manifest.workspaceRoot.outside : undefined;
		const rootTarget = outside ? (workspaceRoot ?? outside) : undefined;
		if (!emptyOrMissing(dataDir))
			throw new Error(
				`${dataDir} is not empty; restore into an empty or missing data dir (move the old one aside first)`,
			);
		if (rootTarget && !emptyOrMissing(rootTarget))
			throw new Error(
				`${rootTarget} is not empty; restore the workspace root into an empty or missing folder (--workspace-root DIR)`,
			);
		mkdirSync(dataDir, { recursive: true, mode: 0o700 });
		// --no-same-owner: files belong to whoever restores (the service's user), not the uids in the archive.
		tar(["-xzf", join(staging, "data.tar.gz"), "-C", dataDir, "--no-same-owner"]);
		if (rootTarget) {
			mkdirSync(rootTarget, { recursive: true });
			tar(["-xzf", join(staging, "workspace.tar.gz"), "-C", rootTarget, "--no-same-owner"]);
		}
		console.error(
			`pi-gateway: restored ${file} (made ${manifest.createdAt}) into ${dataDir}${rootTarget ? ` and ${rootTarget}` : ""}; start the gateway on it${rootTarget ? ` with --workspace-root ${rootTarget}` : ""}`,
		);
	} finally {
		rmSync(staging, { recursive: true, force: true });
	}
}

/** The CLI's entry: errors are one line on stderr and exit status 2, as for every subcommand. */
export function backupCli(verb: "backup" | "restore", argv: string[]): void {
	try {
		(verb === "backup" ? backupCommand : restoreCommand)(argv);
	} catch (error) {
		console.error(`pi-gateway ${verb}: ${(error as Error).message}`);
		process.exit(2);
	}
}
