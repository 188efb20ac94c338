import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayError } from "../../src/shared/errors.ts";
import { assertOpenedInside, openInside, resolveWorkspacePath } from "../../src/workspace/paths.ts";
import { deleteFile, writeFile } from "../../src/workspace/writing.ts";
import { attackFolder, attacks } from "../helpers/workspace-attacks.ts";

let base: string;
let root: string;

beforeAll(() => {
	({ base, root } = attackFolder());
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const refusal = async (run: () => Promise<unknown>) => {
	const error = await run().then(
		() => undefined,
		(e: unknown) => e,
	);
	return error instanceof GatewayError ? `${error.status} ${error.code}` : String(error);
};

describe("the workspace path resolver", () => {
	it.each(attacks)("refuses %s for reading (403)", async (_name, path) => {
		expect(
			await refusal(async () => openInside(await resolveWorkspacePath(root, path), path).then((h) => h.close())),
		).toBe("403 path_outside_root");
	});

	it.each(attacks)("refuses %s for writing (403) and writes nothing outside", async (_name, path) => {
		expect(await refusal(() => writeFile(root, path, Readable.from([Buffer.from("pwned")]), { maxBytes: 100 }))).toBe(
			"403 path_outside_root",
		);
		expect(readFileSync(join(base, "outside", "secret"), "utf8")).toBe("secret");
		expect(existsSync(join(base, "outside", "new.txt"))).toBe(false);
	});

	it("answers a symlink loop 403 and a file used as a folder 404, never a 500 (hostile-agent battery)", async () => {
		symlinkSync("loop", join(root, "loop"));
		writeFileSync(join(root, "plain"), "x");
		const read = (path: string) =>
			refusal(async () => openInside(await resolveWorkspacePath(root, path), path).then((h) => h.close()));
		expect(await read("loop")).toBe("403 path_outside_root");
		expect(await read("loop/x")).toBe("403 path_outside_root");
		expect(await read("plain/config")).toBe("404 path_not_found");
	});

	it("deletes a symlink that points out, never its target", async () => {
		symlinkSync("../outside/secret", join(root, "link-to-delete"));
		await deleteFile(root, "link-to-delete");
		expect(existsSync(join(root, "link-to-delete"))).toBe(false);
		expect(readFileSync(join(base, "outside", "secret"), "utf8")).toBe("secret");
	});

	it("resolves what stays inside: plain, `.`, `..` within, a symlink inside, the folder itself, a new path", async () => {
		for (const path of ["sub/file.txt", "./sub/./file.txt", "sub/../sub/file.txt", "link-in/file.txt"]) {
			const handle = await openInside(await resolveWorkspacePath(root, path), path);
			expect((await handle.readFile()).toString()).toBe("inside");
			await handle.close();
		}
		expect((await resolveWorkspacePath(root, "")).rel).toBe("");
		expect((await resolveWorkspacePath(root, "new/deeper/file.txt")).rel).toBe("new/deeper/file.txt");
	});

	it("writes through a symlink that points inside, and makes folders", async () => {
		await writeFile(root, "link-in/through.txt", Readable.from([Buffer.from("via link")]), { maxBytes: 100 });
		expect(readFileSync(join(root, "sub", "through.txt"), "utf8")).toBe("via link");
		await writeFile(root, "made/on/the/way.txt", Readable.from([Buffer.from("x")]), { maxBytes: 100 });
		expect(readFileSync(join(root, "made", "on", "the", "way.txt"), "utf8")).toBe("x");
	});

	it("catches a swap after the check: a descriptor that turned out to be outside is closed and refused", async () => {
		// What a lost race leaves: the check saw a folder inside, the open got the sibling's file.
		const handle = await open(join(base, "outside", "secret"), "r");
		expect(await refusal(() => assertOpenedInside(handle, root, "sub/file.txt"))).toBe("403 path_outside_root");
		await expect(handle.stat()).rejects.toThrow();
	});

	it("refuses a swap between resolving and opening (the folder became a symlink out)", async () => {
		mkdirSync(join(root, "swap"));
		writeFileSync(join(root, "swap", "secret"), "mine");
		const target = await resolveWorkspacePath(root, "swap/secret");
		rmSync(join(root, "swap"), { recursive: true });
		symlinkSync("../outside", join(root, "swap"));
		expect(await refusal(() => openInside(target, "swap/secret"))).toBe("403 path_outside_root");
	});

	it("a session's folder that is gone is 404, not an error", async () => {
		expect(await refusal(() => resolveWorkspacePath(join(base, "no-such-folder"), "a.txt"))).toBe("404 path_not_found");
	});

	it("bounds an upload and leaves no partial file behind", async () => {
		const big = Readable.from([Buffer.alloc(60), Buffer.alloc(60)]);
		expect(await refusal(() => writeFile(root, "sub/big.bin", big, { maxBytes: 100 }))).toBe("413 body_too_large");
		expect(existsSync(join(root, "sub", "big.bin"))).toBe(false);
	});
});
