import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { sharedWritableInodes } from "../../src/workspace/mapped-files.ts";
import { until } from "../helpers/gateway.ts";

const root = mkdtempSync(join(tmpdir(), "pi-gateway-mapped-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it("finds the files a grandchild maps shared and writable, not those it maps read-only or privately", async () => {
	const files = ["shared-rw", "shared-ro", "private"].map((name) => {
		const path = join(root, name);
		writeFileSync(path, "x".repeat(4096));
		return path;
	});
	const [rw, ro, priv] = files as [string, string, string];
	const script = [
		"import mmap,sys,time",
		`a=open(${JSON.stringify(rw)},'r+b'); m1=mmap.mmap(a.fileno(),0)`,
		`b=open(${JSON.stringify(ro)},'rb'); m2=mmap.mmap(b.fileno(),0,access=mmap.ACCESS_READ)`,
		`c=open(${JSON.stringify(priv)},'r+b'); m3=mmap.mmap(c.fileno(),0,access=mmap.ACCESS_COPY)`,
		"print('mapped', flush=True); time.sleep(30)",
	].join("\n");
	// sh in between: the mapping is a grandchild's.
	const child = spawn("sh", ["-c", 'python3 -c "$0"; true', script], { stdio: ["ignore", "pipe", "inherit"] });
	try {
		await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
		const inode = (path: string) => statSync(path).ino % 2 ** 32;
		const found = await until(async () => {
			const mapped = sharedWritableInodes(process.pid);
			return mapped.inodes.has(inode(rw)) && mapped;
		}, 10_000);
		expect(found.unreadable).toBe(0);
		expect(found.inodes.has(inode(ro))).toBe(false);
		expect(found.inodes.has(inode(priv))).toBe(false);
		// Past its bounds it says it could not read everything, never a quiet partial answer.
		expect(sharedWritableInodes(process.pid, { maxProcesses: 1, maxMapsBytes: 1 << 30 }).unreadable).toBe(1);
		expect(sharedWritableInodes(process.pid, { maxProcesses: 100, maxMapsBytes: 100 }).unreadable).toBe(1);
	} finally {
		child.kill();
		await new Promise((resolve) => spawn("pkill", ["-f", rw]).on("exit", resolve));
	}
});
