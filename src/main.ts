import { mkdirSync } from "node:fs";
import { enableCompileCache } from "node:module";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { ZodError } from "zod";
import type { startGateway } from "./app/server.ts";
import { listenRefusal, startupNotices } from "./app/startup-notices.ts";
import { cacheStrippedTypes } from "./app/stripped-types-cache.ts";
import { keysCommand } from "./cli/keys.ts";
import { databaseUrlOnArgv, hasPassword } from "./cluster/credentials.ts";
import { parseConfig } from "./config/config.ts";
import { help } from "./config/help.ts";
import { explainConfigError, printConfig, readSettings, type Settings, settingsReport } from "./config/sources.ts";
import { gatewayVersion } from "./shared/package-files.ts";

/** A signal within this long after the first is the same one delivered twice, not a second. */
const sameSignalMs = 200;

async function main(): Promise<void> {
	if (process.argv[2] === "acp") {
		// The ACP bridge (src/acp/): stdout is the protocol's, so errors go to stderr only.
		const { acpCommand } = await import("./acp/cli.ts");
		try {
			await acpCommand(process.argv.slice(3), gatewayVersion);
		} catch (error) {
			console.error(`pi-gateway acp: ${(error as Error).message}`);
			process.exit(2);
		}
		process.exit(0);
	}
	if (process.argv[2] === "backup" || process.argv[2] === "restore") {
		(await import("./cli/backup.ts")).backupCli(process.argv[2], process.argv.slice(3));
		return;
	}
	if (process.argv[2] === "keys") {
		try {
			keysCommand(process.argv.slice(3));
		} catch (error) {
			console.error(`pi-gateway: ${(error as Error).message}`);
			process.exit(2);
		}
		return;
	}
	// A process-wide V8 setting, so the CLI's: after paced traffic V8 put the log's events in old space
	// for good and floods cost 2× (BENCHMARKS.md, fourth pass). Read at each GC, so it takes effect now.
	setFlagsFromString("--no-allocation-site-pretenuring");
	let gateway: Awaited<ReturnType<typeof startGateway>>;
	let settings: Settings | undefined;
	try {
		const command = readSettings(process.argv.slice(2));
		if (command.kind === "help") {
			console.log(help());
			process.exit(0);
		}
		if (command.kind === "version") {
			console.log(gatewayVersion);
			process.exit(0);
		}
		settings = command.settings;
		const config = parseConfig(settings.input);
		if (settings.printConfig) {
			console.log(printConfig(settings, config));
			process.exit(0);
		}
		for (const line of [...settings.warnings, ...settingsReport(settings, config)]) console.error(line);
		const url = settings.sources.get("databaseUrl");
		const urlOnArgv = url?.from === "flag" && typeof url.raw === "string" && hasPassword(url.raw);
		if (urlOnArgv) console.error(`pi-gateway: WARNING: ${databaseUrlOnArgv}`);
		// The server's code is compiled once per data dir and its bytecode kept there (not in the shared
		// /tmp, where another user could plant some): a restart reaches listening on ≈ 15 % less CPU.
		// NODE_COMPILE_CACHE, when set, has turned a cache on already and wins.
		// Only a speed-up: a data dir it cannot make is the start's to report, in its own words.
		try {
			const compileCache = join(config.dataDir, "compile-cache", "gateway");
			mkdirSync(compileCache, { recursive: true, mode: 0o700 });
			enableCompileCache(compileCache);
			// Always the data dir's: NODE_COMPILE_CACHE may name a shared folder, and this is read back as code.
			if (import.meta.url.endsWith(".ts")) cacheStrippedTypes(join(compileCache, "stripped"), import.meta.dirname);
		} catch {}
		// Loaded only to start: --help, --print-config, keys and a bad flag answer without the server's code.
		const server = await import("./app/server.ts");
		gateway = await server.startGateway(settings.input, undefined, {
			tokenFrom: settings.tokenOnArgv ? "argv" : "env",
			databasePasswordOnArgv: urlOnArgv,
			configFile: settings.file.read ? settings.file.path : undefined,
		});
	} catch (error) {
		const message =
			error instanceof ZodError && settings
				? explainConfigError(error, settings.sources)
				: (listenRefusal(error, settings?.sources) ?? (error as Error).message);
		console.error(`pi-gateway: ${message}`);
		process.exit(2);
	}
	for (const line of startupNotices(gateway)) console.error(line);
	// Whatever ends this process, no pi child outlives it unasked (they would also exit on stdin EOF).
	process.on("exit", () => gateway.registry.killAll());
	let firstSignalAt: number | undefined;
	const stop = (signal: string) => {
		if (firstSignalAt !== undefined) {
			// One signal delivered twice at once counts once: Ctrl-C reaches npm and the gateway, and npm
			// passes it on; so does a signal to the process group.
			if (Date.now() - firstSignalAt < sameSignalMs) return;
			console.error(`pi-gateway: second ${signal}, killing every pi process now`);
			process.exit(1);
		}
		firstSignalAt = Date.now();
		const ms = gateway.config.drainTimeoutMs;
		console.error(
			`pi-gateway: ${signal}, stopping every session once runs in progress settle (at most ${ms} ms, --drain-timeout-ms; a second signal stops at once)…`,
		);
		gateway.close({ drain: true }).then(
			() => process.exit(0),
			(error) => {
				console.error(`pi-gateway: shutdown failed: ${(error as Error).message}`);
				process.exit(1);
			},
		);
	};
	// SIGHUP reloads the keys file (a change to it is also picked up by itself).
	process.on("SIGHUP", () => gateway.keys?.reload());
	process.on("SIGTERM", () => stop("SIGTERM"));
	process.on("SIGINT", () => stop("SIGINT"));
}

await main();
