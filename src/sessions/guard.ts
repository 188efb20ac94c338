import { dirname, join, resolve } from "node:path";
import type { Config } from "../config.ts";
import { ApiError } from "../http/problem.ts";
import type { PiCommand } from "../pi/protocol.ts";
import { confine } from "./spawn.ts";

/** Where pi keeps the gateway's session files (its --session-dir). */
export function piSessionDir(config: Config): string {
	return join(config.dataDir, "pi-sessions");
}

/** Decoded size of base64 text, without decoding it. */
export function base64Bytes(data: string): number {
	const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
	return Math.floor((data.length * 3) / 4) - padding;
}

function confineAny(roots: string[], path: string, what: string): string {
	let missing: ApiError | undefined;
	let outside = false;
	for (const root of roots) {
		try {
			return confine(root, path, what);
		} catch (error) {
			// A root that does not exist (yet) refuses nothing by itself.
			if (!(error instanceof ApiError)) continue;
			if (error.status === 403) outside = true;
			else missing ??= error;
		}
	}
	// A path that exists but lies outside (403) says more than one missing under some root (400).
	if (missing && !outside) throw missing;
	throw new ApiError(403, "path_outside_root", `${what} must lie inside ${roots.join(" or ")}`);
}

/** An output file: its folder must exist inside the workspace (symlinks followed); the file may be new. */
function confineOutput(config: Config, path: string): string {
	const target = resolve(config.workspaceRoot, path);
	const folder = confine(config.workspaceRoot, dirname(target), "outputPath's folder");
	return resolve(folder, target.slice(dirname(target).length + 1));
}

/**
 * The last check before a command reaches pi, whichever route it came by (typed routes or raw
 * /rpc): image sizes, and every path a command names resolved inside the allowed roots. Returns
 * the command with its paths made real; throws 400/403/413 and nothing is sent.
 */
export function guardCommand(config: Config, command: PiCommand): PiCommand {
	const images = command.images;
	if (Array.isArray(images)) {
		for (const [index, image] of images.entries()) {
			const data = (image as { data?: unknown } | null)?.data;
			if (typeof data !== "string") continue;
			const bytes = base64Bytes(data);
			if (bytes > config.maxImageBytes) {
				throw new ApiError(
					413,
					"image_too_large",
					`Image ${index} is ${bytes} bytes; images are limited to ${config.maxImageBytes} bytes`,
				);
			}
		}
	}
	const out = { ...command };
	if (typeof out.outputPath === "string") out.outputPath = confineOutput(config, out.outputPath);
	for (const key of ["sessionPath", "parentSession"] as const) {
		const value = out[key];
		// pi's session folder, not the whole data dir: gateway.db is no session file.
		if (typeof value === "string") out[key] = confineAny([piSessionDir(config), config.workspaceRoot], value, key);
	}
	return out;
}
