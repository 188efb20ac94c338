import type { Element, ElementContent, Root } from "hast";
import { common, createLowlight } from "lowlight";
import type { ComponentChildren } from "preact";

/**
 * Syntax colours for the changes view, loaded only with it (see review.tsx). lowlight runs
 * highlight.js 11's grammars (its 37 common ones) and returns a syntax tree rather than HTML, so the
 * agent's code reaches the page as text nodes in spans whose only attribute is highlight.js's class:
 * nothing of it is parsed as markup. A line is highlighted on its own (a diff shows pieces of a
 * file), so a string or comment that spans lines is coloured from where the hunk shows it.
 */
const lowlight = createLowlight(common);

const byExtension: Record<string, string> = {
	js: "javascript",
	mjs: "javascript",
	cjs: "javascript",
	jsx: "javascript",
	ts: "typescript",
	mts: "typescript",
	cts: "typescript",
	tsx: "typescript",
	py: "python",
	sh: "bash",
	bash: "bash",
	zsh: "bash",
	json: "json",
	css: "css",
	scss: "scss",
	less: "less",
	html: "xml",
	htm: "xml",
	xml: "xml",
	svg: "xml",
	md: "markdown",
	markdown: "markdown",
	yml: "yaml",
	yaml: "yaml",
	toml: "ini",
	ini: "ini",
	go: "go",
	rs: "rust",
	java: "java",
	kt: "kotlin",
	c: "c",
	h: "c",
	cc: "cpp",
	cpp: "cpp",
	hpp: "cpp",
	cs: "csharp",
	rb: "ruby",
	php: "php",
	swift: "swift",
	sql: "sql",
	lua: "lua",
	pl: "perl",
	r: "r",
	diff: "diff",
	patch: "diff",
};

/** The grammar for a path, by its extension (or its name: Makefile, Dockerfile); none: plain text. */
export function languageOf(path: string): string | undefined {
	const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
	if (name === "makefile") return "makefile";
	const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1) : "";
	const language = byExtension[ext];
	return language && lowlight.registered(language) ? language : undefined;
}

/**
 * One line of code with its tokens coloured, and the ranges `marks` names (what changed inside the
 * line: intraline.ts) wrapped in <mark>; plain text when there is no grammar or it throws.
 */
export function Code({
	text,
	language,
	marks,
}: {
	text: string;
	language?: string;
	marks?: readonly (readonly [number, number])[];
}): ComponentChildren {
	let children: (Root["children"][number] | ElementContent)[] = [{ type: "text", value: text }];
	if (language && text.length <= 2000) {
		try {
			children = lowlight.highlight(language, text).children;
		} catch {}
	}
	let at = 0;
	const cut = (value: string): ComponentChildren => {
		const start = at;
		at += value.length;
		if (!marks || marks.length === 0) return value;
		const pieces: ComponentChildren[] = [];
		let from = start;
		for (const [a, b] of marks) {
			const s = Math.max(a, from);
			const e = Math.min(b, at);
			if (e <= s) continue;
			if (s > from) pieces.push(value.slice(from - start, s - start));
			pieces.push(<mark class="chg">{value.slice(s - start, e - start)}</mark>);
			from = e;
		}
		if (from < at) pieces.push(value.slice(from - start));
		return pieces;
	};
	const toNode = (node: Root["children"][number] | ElementContent, i: number): ComponentChildren => {
		if (node.type === "text") return cut(node.value);
		if (node.type !== "element") return null;
		const el = node as Element;
		const names = el.properties.className;
		const className = Array.isArray(names)
			? names.filter((n) => typeof n === "string" && /^hljs-[\w-]+$/.test(n)).join(" ")
			: "";
		return (
			<span key={i} class={className || undefined}>
				{el.children.map(toNode)}
			</span>
		);
	};
	return children.map(toNode);
}
