import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { changesBetween } from "../../src/workspace/changes.ts";
import { Snapshots } from "../../src/workspace/snapshots.ts";

// Each file's diff must be its own: the patch git prints for all files is cut into pieces, and a
// piece once went to the file at its position, so a type change (two pieces) or a name that is not
// UTF-8 (no piece under its decoded name) moved every later diff onto a neighbour.
const root = mkdtempSync(join(tmpdir(), "pi-gateway-changes-pairing-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const limits = { timeoutMs: 10_000, maxFiles: 100, maxDiffBytes: 100_000, maxTotalBytes: 1_000_000 };

const names: Buffer[] = [
	Buffer.from("a.txt"), // becomes a link: a type change, two pieces
	Buffer.from([0x61, 0xff]), // "a\xff": not UTF-8
	Buffer.from([0x61, 0xfe]), // another that decodes to the same "a\ufffd"
	Buffer.from("b.txt"),
	Buffer.from('quote".txt'),
	Buffer.from("back\\slash.txt"),
	Buffer.from("tab\there.txt"),
	Buffer.from("new\nline.txt"),
	Buffer.from("bell\u0007.txt"),
	Buffer.from("del\u007f.txt"),
	Buffer.from("-dash.txt"),
	Buffer.from("space here.txt"),
	Buffer.from("ünïcode.txt"),
	Buffer.from("run.sh"),
];

it("gives every file its own diff: type changes, names that are not UTF-8, names git quotes", async () => {
	const folder = join(root, "folder");
	execFileSync("mkdir", ["-p", folder]);
	const path = (name: Buffer) => Buffer.concat([Buffer.from(`${folder}/`), name]);
	for (const [i, name] of names.entries()) writeFileSync(path(name), `before ${i}\n`);
	const snapshots = new Snapshots(join(root, "snapshots"), folder, 10_000);
	const before = await snapshots.snapshot();
	unlinkSync(path(names[0] as Buffer));
	symlinkSync("target", path(names[0] as Buffer));
	names.forEach((name, i) => {
		if (i > 0) writeFileSync(path(name), `after ${i}\n`);
	});
	const after = await snapshots.snapshot();

	const { files, truncated } = await changesBetween(snapshots.repo, before, after, limits);
	expect(truncated).toBe(false);
	expect(files).toHaveLength(names.length);
	const typeChange = files.find((f) => f.path === "a.txt");
	expect(typeChange?.diff).toContain("-before 0");
	expect(typeChange?.diff).toContain("+target");
	// Every other file: its own lines and nobody else's, and a header that names it.
	for (const file of files.filter((f) => f.path !== "a.txt")) {
		const i = names.findIndex(
			(n) => n.toString("utf8") === file.path && file.diff?.includes(`+after ${names.indexOf(n)}\n`),
		);
		expect(i, `${JSON.stringify(file.path)}: ${JSON.stringify(file.diff)}`).toBeGreaterThan(0);
		expect(file.diff).toContain(`-before ${i}\n`);
		expect(file.diff?.match(/^\+after /gm)).toHaveLength(1);
		expect(file.truncated).toBe(false);
	}
	// The two names that decode alike each got one of the two diffs, not the same one twice.
	const alike = files.filter((f) => f.path === "a\ufffd").map((f) => f.diff);
	expect(alike).toHaveLength(2);
	expect(new Set(alike).size).toBe(2);
});

it("a cut patch leaves no half of a type change: the file whose piece was cut says truncated", async () => {
	const folder = join(root, "cut");
	execFileSync("mkdir", ["-p", folder]);
	writeFileSync(join(folder, "link.txt"), `${"x".repeat(100)}\n`.repeat(50));
	writeFileSync(join(folder, "z.txt"), "z\n");
	const snapshots = new Snapshots(join(root, "cut-snapshots"), folder, 10_000);
	const before = await snapshots.snapshot();
	unlinkSync(join(folder, "link.txt"));
	symlinkSync("t".repeat(2000), join(folder, "link.txt"));
	const after = await snapshots.snapshot();
	const whole = (await changesBetween(snapshots.repo, before, after, limits)).files[0]?.diff as string;
	const firstHalf = whole.indexOf("\ndiff --git ") + 1;
	expect(firstHalf).toBeGreaterThan(5000);
	// A cap that ends inside the second piece (the link's 2,000-byte target).
	const { files, truncated } = await changesBetween(snapshots.repo, before, after, {
		...limits,
		maxTotalBytes: firstHalf + 500,
	});
	expect(truncated).toBe(true);
	expect(files).toEqual([{ path: "link.txt", status: "modified", binary: false, diff: null, truncated: true }]);
});
