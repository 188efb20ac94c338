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

/** One line of code with its tokens coloured; plain text when there is no grammar or it throws. */
export function Code({ text, language }: { text: string; language?: string }): ComponentChildren {
	if (!language || text.length > 2000) return text;
	let tree: Root;
	try {
		tree = lowlight.highlight(language, text);
	} catch {
		return text;
	}
	return tree.children.map(toNode);
}

function toNode(node: Root["children"][number] | ElementContent, i: number): ComponentChildren {
	if (node.type === "text") return node.value;
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
}
