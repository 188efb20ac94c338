import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

// The fenced blocks of README.md and docs/*.md, and the convention that makes their shell blocks
// checkable (test/e2e/docs-blocks.test.ts):
// - A shell block (```sh, ```bash, ```shell, ```console) runs in the suite. Right before its fence
//   an HTML comment may say who runs it instead — `<!-- run by test/e2e/x.test.ts -->` (that file
//   must name the page), `<!-- walkthrough:start -->` (test/e2e/clients.test.ts) — or why it is not
//   run: `<!-- not run: why -->`. Without a comment, docs-blocks.test.ts runs it.
// - What a block prints is shown either by `# → line` comments after the commands whose output
//   they are (each group of such lines is the output of the commands since the previous group), or
//   by an untagged ``` block right after it (the whole output). `…` on a line of its own stands
//   for any number of lines, `…` inside a line for any text; session ids, command ids, event ids
//   and positions, and timestamps are compared normalised.

export const repo = resolve(import.meta.dirname, "../..");

export interface DocBlock {
	/** Path relative to the repository. */
	file: string;
	/** 1-based line of the opening fence. */
	line: number;
	info: string;
	code: string;
	/** The HTML comment right before the fence, without `<!--`/`-->`. */
	marker?: string;
	/** An untagged block right after this one (its shown output). */
	output?: string;
}

export const shellInfos = new Set(["sh", "bash", "shell", "console"]);

export function docFiles(): string[] {
	const docs = readdirSync(join(repo, "docs"))
		.filter((f) => f.endsWith(".md"))
		.sort()
		.map((f) => `docs/${f}`);
	return ["README.md", ...docs];
}

/** Top-level (unindented) fenced blocks of one markdown file. */
export function docBlocks(file: string): DocBlock[] {
	const lines = readFileSync(join(repo, file), "utf8").split("\n");
	const blocks: DocBlock[] = [];
	let end = -1;
	for (let i = 0; i < lines.length; i++) {
		const open = /^```(\S*)\s*$/.exec(lines[i] as string);
		if (!open || i <= end) continue;
		const close = lines.findIndex((l, j) => j > i && l === "```");
		if (close < 0) throw new Error(`${file}:${i + 1}: unclosed fence`);
		let before = i - 1;
		while (before >= 0 && (lines[before] as string).trim() === "") before--;
		const marker = /^<!--\s*([\s\S]*?)\s*-->$/.exec((lines[before] ?? "").trim())?.[1];
		blocks.push({ file, line: i + 1, info: open[1] as string, code: lines.slice(i + 1, close).join("\n"), marker });
		end = close;
	}
	// An untagged block that follows a shell block with only blank lines between is its output.
	for (let k = 0; k + 1 < blocks.length; k++) {
		const a = blocks[k] as DocBlock;
		const b = blocks[k + 1] as DocBlock;
		const closeOfA = a.line + a.code.split("\n").length;
		const between = lines.slice(closeOfA + 1, b.line - 1);
		if (shellInfos.has(a.info) && b.info === "" && between.every((l) => l.trim() === "")) a.output = b.code;
	}
	return blocks;
}

/** Shell blocks, and untagged ones that read as a transcript (`$ command`): those must say what they are. */
export function shellBlocks(): DocBlock[] {
	return docFiles().flatMap((f) =>
		docBlocks(f).filter((b) => shellInfos.has(b.info) || (b.info === "" && /^\$ /.test(b.code))),
	);
}

/** Volatile values replaced by stand-ins, in shown and in real output alike. */
export function normalise(text: string): string {
	return text
		.replace(/\r/g, "")
		.replace(/ses_[\w-]{12}/g, "ses_ID")
		.replace(/\bgw_\d+/g, "gw_N")
		.replace(/^id: \d+$/gm, "id: N")
		.replace(/"(after|lastEventId|firstAvailable|resumeFrom)":\d+/g, '"$1":N')
		.replace(/\bafter=\d+/g, "after=N")
		.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, "TIME");
}

/** A regular expression for shown output: `…` alone on a line is any lines, inside a line any text. */
export function shownPattern(shown: string): RegExp {
	const lines = normalise(shown).replace(/\s+$/, "").split("\n");
	const source = lines
		.map((line) =>
			line.trim() === "…"
				? "(?:[^\\n]*\\n)*?"
				: `${line
						.split("…")
						.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
						.join("[^\\n]*?")}\\n`,
		)
		.join("");
	return new RegExp(`^${source}$`);
}

/** Does real output fit what a block shows? */
export function fits(actual: string, shown: string): boolean {
	return shownPattern(shown).test(`${normalise(actual).replace(/\s+$/, "")}\n`);
}

export const outputMark = "@@docs-block-output@@";

/**
 * The block as a script whose output can be cut where the block shows some: each group of
 * `# → ` lines becomes an echo of the mark. Returns the script and the shown groups.
 */
export function scriptOf(block: DocBlock): { script: string; groups: string[] } {
	const groups: string[] = [];
	const out: string[] = [];
	let group: string[] | undefined;
	for (const line of block.code.split("\n")) {
		const shown = /^\s*# → ?(.*)$/.exec(line);
		if (shown) {
			if (!group) {
				group = [];
				out.push(`echo '${outputMark}'`);
			}
			group.push(shown[1] as string);
			continue;
		}
		if (group) groups.push(group.join("\n"));
		group = undefined;
		out.push(line);
	}
	if (group) groups.push(group.join("\n"));
	return { script: out.join("\n"), groups };
}
