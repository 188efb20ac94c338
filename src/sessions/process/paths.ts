import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { GatewayError } from "../../shared/errors.ts";

// Path rules every sub-room of sessions/ uses (spawn, areas, the sandbox, the guard, retention).
/** True when `child` (already real) is `root` or lies below it. */
export function isInside(root: string, child: string): boolean {
	const rel = relative(root, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Resolves a user path (symlinks followed) and insists it stays inside `root`. */
export function confine(root: string, path: string, what: string): string {
	const realRoot = realpathSync(root);
	let real: string;
	try {
		real = realpathSync(resolve(realRoot, path));
	} catch {
		throw new GatewayError(400, "path_not_found", `${what} ${JSON.stringify(path)} does not exist`);
	}
	if (!isInside(realRoot, real))
		throw new GatewayError(403, "path_outside_root", `${what} must lie inside ${realRoot}`);
	return real;
}
