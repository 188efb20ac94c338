import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The one table of attacks on the one path-resolving function every workspace route uses:
 * test/unit/workspace-paths.test.ts runs it through the function, test/e2e/workspace-refusals.test.ts
 * through the routes. Each is a way out of the folder that a path string or a symlink offers.
 */
export const attacks: [name: string, path: string][] = [
	["parent", "../outside/secret"],
	["parent through a folder", "sub/../../outside/secret"],
	["absolute", "/etc/passwd"],
	["absolute into the sibling", "/outside/secret"],
	["NUL byte", "sub/file.txt\0.png"],
	["backslashes", "..\\outside\\secret"],
	["symlinked folder out", "link-out/secret"],
	["symlink out (last component)", "link-out-file"],
	["absolute symlink (last component)", "link-abs"],
	["symlink to the parent", "link-up/outside/secret"],
	["dangling symlink", "link-dangling"],
	["new file under a symlinked folder out", "link-out/new.txt"],
];

/** `root` holds sub/file.txt and the symlinks of the table; its sibling `outside` holds the secret. */
export function plantAttacks(root: string): void {
	const base = join(root, "..");
	mkdirSync(join(root, "sub"), { recursive: true });
	mkdirSync(join(base, "outside"), { recursive: true });
	writeFileSync(join(base, "outside", "secret"), "secret");
	writeFileSync(join(root, "sub", "file.txt"), "inside");
	symlinkSync("../outside", join(root, "link-out"));
	symlinkSync("../outside/secret", join(root, "link-out-file"));
	symlinkSync("/etc/passwd", join(root, "link-abs"));
	symlinkSync("..", join(root, "link-up"));
	symlinkSync("../nowhere", join(root, "link-dangling"));
	symlinkSync("sub", join(root, "link-in"));
}

export function attackFolder(): { base: string; root: string } {
	const base = mkdtempSync(join(tmpdir(), "pi-gw-paths-"));
	const root = join(base, "root");
	plantAttacks(root);
	return { base, root };
}
